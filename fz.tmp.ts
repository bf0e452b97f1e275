import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { fuzzTraces, loadCorpus } from './tests/tools/traceFuzz';
import { command as convert } from './src/cli/commands/convert';
const dir = mkdtempSync('/tmp/fzc-');
const bundles: string[] = [];
const log = console.log; console.log = () => {};
for (const s of ['search-scripted', 'coding-random', 'instruction-scripted', 'search-summarize']) { await convert.run([`public/samples/${s}.jsonl`, `${dir}/${s}.json`, '--to', 'agl-events']); bundles.push(readFileSync(`${dir}/${s}.json`, 'utf8')); }
console.log = log;
let k = 0;
const c = fuzzTraces(loadCorpus(bundles), Number(process.argv[2]), Number(process.argv[3]), (m, what) => {
  k++; writeFileSync(`/tmp/fz/${k}-${m.format}.txt`, m.text); writeFileSync(`/tmp/fz/${k}-${m.format}.why`, what);
});
console.log(c.failures);

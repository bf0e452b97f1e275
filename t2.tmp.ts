import { loadTokenizer } from './src/cli/tokenizers';
const t = loadTokenizer('qwen3');
let t0 = performance.now(); console.log(t.tokenLengthStats(), performance.now()-t0);
for (const s of ['a'.repeat(1.5e6), 'hello world '.repeat(1000), 'x1'.repeat(1000)]) { t0 = performance.now(); console.log(t.minTokenCount(s), (performance.now()-t0).toFixed(1), s.length < 1e5 ? t.encode(s).length : ''); }

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { initParams, resolveConfig } from '../../src/engine/model';
import {
  exportHfFolder,
  type FolderFiles,
  type HfTokenizerFiles,
  mapReader,
  readModelFolder,
  stripCommonRoot,
} from '../../src/engine/onnx/hfFolder';

const root = join(import.meta.dirname, '../..');
const read = (f: string) => JSON.parse(readFileSync(join(root, 'public/tokenizer', f), 'utf8'));
const tok: HfTokenizerFiles = {
  tokenizerJson: read('tokenizer.json'),
  tokenizerConfig: read('tokenizer_config.json'),
};
const cfg = resolveConfig({ vocabSize: 1024, contextLength: 64, layers: 1, width: 16, heads: 2, seed: 1 });
const folder = () => exportHfFolder(cfg, initParams(cfg), tok, { precision: 'int8' });
const enc = (s: string) => new TextEncoder().encode(s);
const json = (b: Uint8Array | undefined) => JSON.parse(new TextDecoder().decode(b));

describe('model folders in the Hugging Face layout', () => {
  it('the export has the five files, a GPT-2 config and the tokenizer’s special ids', async () => {
    const f = folder();
    expect([...f.keys()].sort()).toEqual([
      'config.json',
      'generation_config.json',
      'onnx/model.onnx',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
    const c = json(f.get('config.json'));
    expect(c).toMatchObject({
      model_type: 'gpt2',
      n_embd: 16,
      n_layer: 1,
      n_head: 2,
      n_positions: 64,
      vocab_size: 1024,
    });
    expect(c.eos_token_id).toBe(1019); // <|im_end|>
    expect(c.pad_token_id).toBe(1017); // <|endoftext|>
    expect(c.harness_lab.weight_precision).toBe('int8');
    const m = await readModelFolder(mapReader(f));
    expect(m).toMatchObject({
      modelType: 'gpt2',
      dtypes: ['fp32'],
      defaultDtype: 'fp32',
      eosTokenIds: [1019],
      weightPrecision: 'int8',
    });
  });

  const broken: [string, (f: FolderFiles) => void, RegExp][] = [
    ['config.json missing', (f) => f.delete('config.json'), /^config\.json: is missing$/],
    [
      'config.json not JSON',
      (f) => f.set('config.json', enc('{"model_type": ')),
      /^config\.json: is not valid JSON/,
    ],
    ['no model_type', (f) => f.set('config.json', enc('{}')), /^config\.json: has no 'model_type'$/],
    ['tokenizer.json missing', (f) => f.delete('tokenizer.json'), /^tokenizer\.json: is missing$/],
    [
      'tokenizer.json not a tokenizer',
      (f) => f.set('tokenizer.json', enc('[1]')),
      /^tokenizer\.json: must hold a JSON object$/,
    ],
    [
      'tokenizer_config.json missing',
      (f) => f.delete('tokenizer_config.json'),
      /^tokenizer_config\.json: is missing$/,
    ],
    [
      'no chat template',
      (f) => f.set('tokenizer_config.json', enc('{"eos_token": "<|im_end|>"}')),
      /^tokenizer_config\.json: has no 'chat_template' \(and there is no chat_template\.jinja\)/,
    ],
    [
      'no ONNX decoder',
      (f) => f.delete('onnx/model.onnx'),
      /^onnx\/model\.onnx: is missing \(no ONNX decoder found; expected one of onnx\/model\.onnx, onnx\/model_fp16\.onnx/,
    ],
    [
      'generation_config.json not JSON',
      (f) => f.set('generation_config.json', enc('nope')),
      /^generation_config\.json: is not valid JSON/,
    ],
  ];
  for (const [what, breakIt, message] of broken)
    it(`a folder with ${what} is refused naming the file`, async () => {
      const f = folder();
      breakIt(f);
      await expect(readModelFolder(mapReader(f))).rejects.toThrow(message);
    });

  it('reads a chat_template.jinja, other ONNX variants and their external data', async () => {
    const f = folder();
    const cfgJson = json(f.get('tokenizer_config.json'));
    const template = cfgJson.chat_template;
    delete cfgJson.chat_template;
    f.set('tokenizer_config.json', enc(JSON.stringify(cfgJson)));
    f.set('chat_template.jinja', enc(template));
    f.set('onnx/model_q4.onnx', new Uint8Array(1));
    f.set('onnx/model_q4.onnx_data', new Uint8Array(1));
    const m = await readModelFolder(mapReader(f));
    expect(m.tokenizer.tokenizerConfig.chat_template).toBe(template);
    expect(m.dtypes).toEqual(['fp32', 'q4']);
    expect(m.externalData).toEqual({ fp32: [], q4: ['onnx/model_q4.onnx_data'] });
  });

  it('a picked directory’s own name is dropped from its paths', () => {
    expect(stripCommonRoot(['m/config.json', 'm/onnx/model.onnx'])).toEqual({
      prefix: 'm/',
      paths: ['config.json', 'onnx/model.onnx'],
    });
    expect(stripCommonRoot(['config.json', 'onnx/model.onnx']).prefix).toBe('');
  });
});

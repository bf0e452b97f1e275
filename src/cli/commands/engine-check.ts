/**
 * `npm run lab -- engine-check`: runs every WGSL kernel against its CPU reference, a full training step
 * against the CPU step and a gradient check on this machine's WebGPU adapter (Dawn), printing each max
 * error. Exits 1 if any check fails or no adapter is found.
 */
import { runSelfCheck } from '../../engine/selfcheck';
import { parseArgs, UsageError } from '../args';
import type { Command } from '../lab';
import { nodeGpuContext, reexecWithSwiftShader } from '../webgpuNode';

export const command: Command = {
  summary: 'Check the WGSL kernels and a training step against the CPU reference on the local WebGPU adapter',
  usage: 'npm run lab -- engine-check',
  async run(argv) {
    const { positionals } = parseArgs(argv, {});
    if (positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    // Vulkan reads its driver list at process start: if none is configured, rerun with SwiftShader's.
    const child = reexecWithSwiftShader();
    if (child !== null) return child;
    let ctx: Awaited<ReturnType<typeof nodeGpuContext>>;
    try {
      ctx = await nodeGpuContext();
    } catch (e) {
      console.error(`engine-check: ${(e as Error).message}`);
      return 1;
    }
    const s = ctx.status;
    console.log(
      `adapter: ${s.vendor} ${s.architecture} ${s.description}${s.isFallbackAdapter ? ' (fallback)' : ''}`,
    );
    console.log(`shader-f16: ${s.shaderF16 ? 'available (f32 path used)' : 'not available (f32 path)'}`);
    const started = performance.now();
    const results = await runSelfCheck(ctx, (r) => {
      console.log(
        `${r.ok ? 'ok  ' : 'FAIL'} ${r.name.padEnd(48)} max error ${r.error.toExponential(2)}  (tolerance ${r.tolerance.toExponential(1)})`,
      );
    });
    ctx.destroy();
    const failed = results.filter((r) => !r.ok).length;
    console.log(
      `${results.length - failed}/${results.length} checks passed in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
    return failed ? 1 : 0;
  },
};

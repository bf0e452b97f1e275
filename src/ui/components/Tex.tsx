import katex from 'katex';

/** Rendered formulas by TeX source: the registries' formulas are few and fixed, so each is typeset once. */
const cache = new Map<string, string>();

function render(tex: string, display: boolean): string {
  const key = `${display ? 'D' : 'I'}${tex}`;
  let html = cache.get(key);
  if (html === undefined) {
    // MathML only: Chromium typesets it natively, so no fonts or style sheet are shipped for it
    html = katex.renderToString(tex, { output: 'mathml', displayMode: display, throwOnError: false });
    cache.set(key, html);
  }
  return html;
}

/**
 * A formula's parts one under another (its `\quad`-separated parts, trailing commas dropped), for narrow places
 * such as the options column.
 */
export function stackedTex(tex: string): string {
  const parts = tex
    .split(/\\quad/)
    .map((p) => p.trim().replace(/,$/, ''))
    .filter(Boolean);
  return parts.length > 1 ? `\\begin{gathered}${parts.join('\\\\')}\\end{gathered}` : tex;
}

/**
 * A formula typeset from TeX (KaTeX → MathML). `fallback` (the registry's plain-text formula) is what assistive
 * technology and copy-paste get as its label.
 */
export function Tex(props: { tex: string; display?: boolean; label?: string; className?: string }) {
  return (
    <span
      className={props.className ? `tex ${props.className}` : 'tex'}
      title={props.label}
      // biome-ignore lint/security/noDangerouslySetInnerHtml: KaTeX output of the registries' own TeX strings
      dangerouslySetInnerHTML={{ __html: render(props.tex, props.display ?? false) }}
    />
  );
}

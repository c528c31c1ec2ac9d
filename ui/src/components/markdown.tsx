/**
 * Markdown from a package's readme, rendered with `marked` (GitHub-flavoured) and sanitised with
 * DOMPurify before it reaches the page: a readme is written by whoever published the package, so
 * its raw HTML (a `<script>`, an `onerror=`, a `javascript:` link) is dropped, not obeyed. The
 * hub's Content-Security-Policy forbids inline scripts as well; the sanitiser is what keeps them
 * out of the DOM.
 */
import DOMPurify from 'dompurify';
import { Marked } from 'marked';
import { useMemo } from 'preact/hooks';

// The readme sits under the package's own heading (an h2): its headings start one level below.
const markdown = new Marked({
  gfm: true,
  walkTokens(token) {
    if (token.type === 'heading') token.depth = Math.min(6, token.depth + 2);
  },
});

let hooked = false;
function purifier(): typeof DOMPurify {
  if (!hooked) {
    // Links leave the UI in a new tab, telling the other site nothing of it.
    DOMPurify.addHook('afterSanitizeAttributes', (node) => {
      if (node.tagName === 'A' && node.hasAttribute('href')) {
        node.setAttribute('target', '_blank');
        node.setAttribute('rel', 'noopener noreferrer');
      }
    });
    hooked = true;
  }
  return DOMPurify;
}

/** The readme as safe HTML: Markdown rendered, then everything but plain HTML content removed. */
export function renderMarkdown(text: string): string {
  const html = markdown.parse(text, { async: false }) as string;
  return purifier().sanitize(html, { USE_PROFILES: { html: true }, FORBID_TAGS: ['style', 'form'] });
}

export function Markdown(props: { text: string; label: string }) {
  const html = useMemo(() => renderMarkdown(props.text), [props.text]);
  return <div class="markdown" aria-label={props.label} role="region" dangerouslySetInnerHTML={{ __html: html }} />;
}

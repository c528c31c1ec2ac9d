import type { ComponentChildren } from 'preact';
import { onLinkClick } from '../router.js';

export function Link(props: {
  href: string;
  children: ComponentChildren;
  class?: string;
  'aria-current'?: 'page' | undefined;
  title?: string;
}) {
  const { href, children, ...rest } = props;
  return (
    <a href={href} onClick={(e) => onLinkClick(e, href)} {...rest}>
      {children}
    </a>
  );
}

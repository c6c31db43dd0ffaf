// Small inline SVG icons (no icon font, no emoji: headless and minimal
// systems lack emoji fonts).
import type { JSX } from 'preact';

type P = JSX.SVGAttributes<SVGSVGElement>;

function Svg(props: P & { children: JSX.Element | JSX.Element[] }) {
  const { children, ...rest } = props;
  return (
    <svg width="14" height="14" viewBox="0 0 16 16" fill="none" stroke="currentColor" stroke-width="1.6" stroke-linecap="round" stroke-linejoin="round" aria-hidden="true" focusable="false" {...rest}>
      {children}
    </svg>
  );
}

export const IconSplit = (p: P) => (
  <Svg {...p}>
    <rect x="1.5" y="2.5" width="13" height="11" rx="2" />
    <path d="M8 2.5v11" />
  </Svg>
);
export const IconPlus = (p: P) => (
  <Svg {...p}>
    <path d="M8 3v10M3 8h10" />
  </Svg>
);
export const IconClose = (p: P) => (
  <Svg {...p}>
    <path d="M4 4l8 8M12 4l-8 8" />
  </Svg>
);
export const IconMenu = (p: P) => (
  <Svg {...p}>
    <path d="M2.5 4h11M2.5 8h11M2.5 12h11" />
  </Svg>
);
export const IconStop = (p: P) => (
  <Svg {...p}>
    <rect x="4" y="4" width="8" height="8" rx="1.5" fill="currentColor" />
  </Svg>
);
export const IconLock = (p: P) => (
  <Svg {...p}>
    <rect x="3" y="7" width="10" height="7" rx="1.5" />
    <path d="M5.5 7V5a2.5 2.5 0 0 1 5 0v2" />
  </Svg>
);
export const IconPause = (p: P) => (
  <Svg {...p}>
    <circle cx="8" cy="8" r="6.5" />
    <path d="M6.5 5.5v5M9.5 5.5v5" />
  </Svg>
);
export const IconWarn = (p: P) => (
  <Svg {...p}>
    <path d="M8 2l6.5 11.5h-13z" />
    <path d="M8 6.5v3M8 11.5v.01" />
  </Svg>
);
export const IconContinue = (p: P) => (
  <Svg {...p}>
    <path d="M13 8a5 5 0 1 1-1.5-3.5" />
    <path d="M13 2.5v3h-3" />
  </Svg>
);

const toolPaths: Record<string, JSX.Element> = {
  read: <path d="M4 1.5h5.5L12.5 4.5v10h-8.5zM9.5 1.5v3h3M6 8h4.5M6 10.5h4.5" />,
  edit: <path d="M10.5 2.5l3 3-8 8H2.5v-3zM9 4l3 3" />,
  delete: <path d="M3 4.5h10M6 4.5V3h4v1.5M4.5 4.5l.7 9h5.6l.7-9" />,
  move: <path d="M2 8h12M11 5l3 3-3 3M5 5L2 8l3 3" />,
  search: <path d="M7 2.5a4.5 4.5 0 1 1 0 9 4.5 4.5 0 0 1 0-9zM10.3 10.3l3.2 3.2" />,
  execute: <path d="M2.5 3.5l4.5 4.5-4.5 4.5M8.5 12.5h5" />,
  think: <path d="M8 2a4.5 4.5 0 0 0-2.5 8.2V12h5v-1.8A4.5 4.5 0 0 0 8 2zM6 14h4" />,
  fetch: <path d="M8 1.5a6.5 6.5 0 1 1 0 13 6.5 6.5 0 0 1 0-13zM1.5 8h13M8 1.5c2 2 2 11 0 13M8 1.5c-2 2-2 11 0 13" />,
  other: <path d="M8 5.5a2.5 2.5 0 1 1 0 5 2.5 2.5 0 0 1 0-5zM8 1.5v2M8 12.5v2M1.5 8h2M12.5 8h2M3.4 3.4l1.4 1.4M11.2 11.2l1.4 1.4M3.4 12.6l1.4-1.4M11.2 4.8l1.4-1.4" />,
};

export const IconTool = ({ kind }: { kind: string }) => <Svg>{toolPaths[kind] ?? toolPaths.other!}</Svg>;
export const IconImage = (p: P) => (
  <Svg {...p}>
    <rect x="1.5" y="2.5" width="13" height="11" rx="2" />
    <circle cx="5.5" cy="6.5" r="1.3" />
    <path d="M14.5 11l-4-4-6.5 6.5" />
  </Svg>
);
export const IconInbox = (p: P) => (
  <Svg {...p}>
    <path d="M2 9.5l1.6-5.6A1.5 1.5 0 0 1 5 2.8h6a1.5 1.5 0 0 1 1.4 1.1L14 9.5V12a1.5 1.5 0 0 1-1.5 1.5h-9A1.5 1.5 0 0 1 2 12z" />
    <path d="M2 9.5h3.5l1 1.5h3l1-1.5H14" />
  </Svg>
);

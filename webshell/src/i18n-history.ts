// The top of a timeline that holds only the latest pages of a long
// transcript: the button that reads earlier turns, its busy and failed
// states, and the mark of the session's start, English and Chinese;
// i18n.ts merges them into its dictionaries.

export const historyEn = {
  'history.earlier': 'Show earlier turns',
  'history.loading': 'Loading earlier turns…',
  'history.failed': 'Could not load earlier turns: {error}',
  'history.retry': 'Try again',
  'history.start': 'Start of the session',
};

export const historyZh: Record<keyof typeof historyEn, string> = {
  'history.earlier': '显示更早的回合',
  'history.loading': '正在加载更早的回合…',
  'history.failed': '无法加载更早的回合：{error}',
  'history.retry': '重试',
  'history.start': '会话开始',
};

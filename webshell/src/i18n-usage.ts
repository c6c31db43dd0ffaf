// What an agent says it used (usage_update): the pane's context gauge and
// cost, and each turn's usage line, English and Chinese; i18n.ts merges
// them into its dictionaries.

export const usageEn = {
  'usage.context': 'Context window',
  'usage.contextShort': 'Context',
  'usage.contextOf': '{used} / {size} tokens',
  'usage.contextValue': '{used} of {size} tokens used ({percent})',
  'usage.cost': 'Cost',
  'usage.costHint': 'What the agent says this session has cost so far',
  'usage.turn': 'Usage of this turn',
  'usage.turnIn': '{n} in',
  'usage.turnOut': '{n} out',
  'usage.turnCached': '{n} cached',
  'usage.turnTotal': '{n} tokens',
  'usage.turnContext': 'context {used} / {size}',
};

export const usageZh: Record<keyof typeof usageEn, string> = {
  'usage.context': '上下文窗口',
  'usage.contextShort': '上下文',
  'usage.contextOf': '{used} / {size} tokens',
  'usage.contextValue': '已用 {used} / {size} tokens（{percent}）',
  'usage.cost': '费用',
  'usage.costHint': '代理报告的本会话迄今费用',
  'usage.turn': '本回合用量',
  'usage.turnIn': '输入 {n}',
  'usage.turnOut': '输出 {n}',
  'usage.turnCached': '缓存 {n}',
  'usage.turnTotal': '{n} tokens',
  'usage.turnContext': '上下文 {used} / {size}',
};

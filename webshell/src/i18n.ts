// English and Chinese strings. Keys are English-ish identifiers; `{name}`
// placeholders are filled by t().
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';

export type Lang = 'en' | 'zh';

const en = {
  'app.title': 'Tether',
  'app.sessions': 'Sessions',
  'app.newSession': 'New session',
  'app.settings': 'Settings',
  'app.language': 'Language',
  'app.autoResume': 'Resume agents automatically when a session is opened',
  'app.noTasks': 'No sessions yet. Start one with “New session”.',
  'app.openHint': 'Pick a session on the left, or start a new one.',
  'app.toggleSidebar': 'Show or hide the session list',
  'app.signOut': 'Forget token',
  'app.untitledTask': 'Untitled task',
  'app.sessionsOf': 'Sessions of {task}',
  'app.openBeside': 'Open {name} beside',
  'app.open': 'Open {name}',
  'app.interrupted': 'interrupted',

  'token.title': 'Connect to tetherd',
  'token.explain': 'Open the Web Shell with the URL that `tetherd serve` (or `make run`) prints — it carries the token after #token=. Or paste the token here:',
  'token.label': 'Token',
  'token.connect': 'Connect',
  'token.rejected': 'The daemon rejected this token. Check the URL that tetherd printed.',
  'token.checking': 'Checking…',

  'conn.open': 'Connected',
  'conn.catching_up': 'Catching up',
  'conn.connecting': 'Connecting',
  'conn.disconnected': 'Disconnected',
  'conn.closed': 'Session closed',
  'conn.label': 'Connection: {state}',

  'exec.starting': 'Agent starting',
  'exec.ready': 'Agent ready',
  'exec.error': 'Agent error',
  'exec.stopped': 'Agent stopped',
  'exec.unknown': 'Agent idle',
  'exec.retry': 'Retry',
  'exec.label': 'Agent: {state}',

  'state.CREATED': 'Created',
  'state.STARTING': 'Starting',
  'state.RUNNING': 'Running',
  'state.WAITING_FOR_INPUT': 'Waiting for input',
  'state.COMPLETED': 'Completed',
  'state.FAILED': 'Failed',
  'state.CANCELLED': 'Cancelled',
  'task.TODO': 'To do',
  'task.IN_PROGRESS': 'In progress',
  'task.REVIEW': 'Review',
  'task.COMPLETED': 'Completed',
  'task.FAILED': 'Failed',
  'task.CANCELLED': 'Cancelled',

  'pane.loading': 'Loading session…',
  'pane.loadFailed': 'Could not load this session: {error}',
  'pane.retryNow': 'Retry now',
  'pane.close': 'Close pane',
  'pane.closeSession': 'End session',
  'pane.closeSessionConfirm': 'End this session? Its agent is stopped and it becomes read-only.',
  'pane.empty': 'Say hello to the agent to start.',
  'pane.readOnly': 'This session has ended; it is read-only.',
  'pane.resume': 'Resume agent',
  'pane.resuming': 'Resuming…',
  'pane.needsResume': 'The agent is not running. It restarts when you send a message, or resume it now.',
  'pane.notResumable': 'This agent cannot resume previous sessions — start a new session',
  'pane.startNew': 'Start a new session',
  'pane.agentUnavailable': 'The agent of this session is not available on this machine — start a new session',
  'pane.cwdMissing': 'The working directory of this session no longer exists — start a new session',
  'pane.conversation': 'Conversation',
  'pane.contextLost': 'The agent could not restore its memory of this conversation; it starts without the earlier context.',
  'pane.dismiss': 'Dismiss',
  'pane.sessionLabel': 'Session {name}',

  'composer.placeholder': 'Message the agent — Enter to send, Shift+Enter for a new line',
  'composer.label': 'Message',
  'composer.send': 'Send',
  'composer.cancel': 'Cancel',
  'composer.cancelling': 'Cancelling…',
  'composer.starting': 'Waiting for the agent to start…',
  'composer.hint': 'Enter sends · Shift+Enter new line · Esc cancels the turn',
  'composer.working': 'Agent is working…',

  'msg.you': 'You',
  'msg.agent': 'Agent',
  'msg.thought': 'Thought',
  'msg.sending': 'Sending…',
  'msg.failed': 'Not sent: {error}',
  'msg.retry': 'Retry',
  'msg.discard': 'Discard',
  'turn.queuedLabel': 'Queued',
  'turn.withdraw': 'Withdraw',
  'turn.continued': 'Continued after an interruption',
  'turn.cancelled': 'Turn cancelled',
  'turn.failed': 'Turn failed: {error}',
  'turn.interrupted': 'Turn interrupted ({reason})',

  'tool.status.pending': 'Pending',
  'tool.status.in_progress': 'Running',
  'tool.status.completed': 'Done',
  'tool.status.failed': 'Failed',
  'tool.interrupted': 'Interrupted',
  'tool.input': 'Input',
  'tool.output': 'Output',
  'tool.details': 'Details of {title}',

  'plan.title': 'Plan',

  'perm.title': 'The agent asks for permission',
  'perm.deny': 'Dismiss request',
  'perm.selected': 'Answered: {option}',
  'perm.cancelled': 'Request cancelled',
  'perm.expired': 'Request expired',

  'banner.interrupted_prompt': 'Your last message was interrupted before the agent answered.',
  'banner.interrupted_turn': 'The agent was interrupted while working on your last message.',
  'banner.degraded_history': 'Part of this conversation’s history is missing, so it cannot be continued automatically. Send a new message to go on.',
  'banner.reason': 'Cause: {reason}.',
  'banner.tools': 'Interrupted tool calls (reported to the agent as failed): {tools}.',
  'banner.continue': 'Continue',
  'banner.continueLabel': 'Continue the interrupted turn',
  'banner.sending': 'Continuing…',
  'banner.refreshing': 'Checking the session…',
  'banner.unknown': 'Could not confirm that the continuation started ({error}). It was not retried; this updates when the daemon reports back.',
  'banner.checkAgain': 'Check again',
  'banner.cannot': 'It cannot be continued right now ({reason}).',
  'banner.declined': 'The daemon declined the last attempt ({reason}).',
  'banner.label': 'Interrupted turn',

  'reason.daemon_restart': 'the daemon restarted',
  'reason.agent_exited': 'the agent process exited',
  'reason.agent_crashed': 'the agent process crashed',

  'new.title': 'New session',
  'new.task': 'Task',
  'new.newTask': 'A new task',
  'new.taskTitle': 'Task title',
  'new.taskTitlePlaceholder': 'What is this about? (optional)',
  'new.agent': 'Agent',
  'new.unavailable': 'Unavailable: {reason}',
  'new.cwd': 'Working directory',
  'new.cwdHint': 'An existing directory on the daemon’s machine, e.g. /home/you/project.',
  'new.prompt': 'First message (optional)',
  'new.create': 'Start session',
  'new.creating': 'Starting…',
  'new.cancel': 'Cancel',
  'new.noAgents': 'No agent profiles are available.',
  'new.resumes': 'resumes sessions',
  'new.noResume': 'cannot resume sessions',
};

export type MessageKey = keyof typeof en;

const zh: Record<MessageKey, string> = {
  'app.title': 'Tether',
  'app.sessions': '会话',
  'app.newSession': '新建会话',
  'app.settings': '设置',
  'app.language': '语言',
  'app.autoResume': '打开会话时自动恢复代理',
  'app.noTasks': '还没有会话。点击“新建会话”开始。',
  'app.openHint': '在左侧选择一个会话，或新建一个。',
  'app.toggleSidebar': '显示或隐藏会话列表',
  'app.signOut': '清除令牌',
  'app.untitledTask': '未命名任务',
  'app.sessionsOf': '{task} 的会话',
  'app.openBeside': '在旁边打开 {name}',
  'app.open': '打开 {name}',
  'app.interrupted': '已中断',

  'token.title': '连接到 tetherd',
  'token.explain': '请使用 `tetherd serve`（或 `make run`）打印的网址打开 Web Shell——令牌在 #token= 之后。也可以在此粘贴令牌：',
  'token.label': '令牌',
  'token.connect': '连接',
  'token.rejected': '守护进程拒绝了此令牌。请检查 tetherd 打印的网址。',
  'token.checking': '正在检查…',

  'conn.open': '已连接',
  'conn.catching_up': '正在同步',
  'conn.connecting': '正在连接',
  'conn.disconnected': '已断开',
  'conn.closed': '会话已关闭',
  'conn.label': '连接：{state}',

  'exec.starting': '代理启动中',
  'exec.ready': '代理就绪',
  'exec.error': '代理出错',
  'exec.stopped': '代理已停止',
  'exec.unknown': '代理空闲',
  'exec.retry': '重试',
  'exec.label': '代理：{state}',

  'state.CREATED': '已创建',
  'state.STARTING': '启动中',
  'state.RUNNING': '运行中',
  'state.WAITING_FOR_INPUT': '等待输入',
  'state.COMPLETED': '已完成',
  'state.FAILED': '失败',
  'state.CANCELLED': '已取消',
  'task.TODO': '待办',
  'task.IN_PROGRESS': '进行中',
  'task.REVIEW': '待审阅',
  'task.COMPLETED': '已完成',
  'task.FAILED': '失败',
  'task.CANCELLED': '已取消',

  'pane.loading': '正在加载会话…',
  'pane.loadFailed': '无法加载此会话：{error}',
  'pane.retryNow': '立即重试',
  'pane.close': '关闭窗格',
  'pane.closeSession': '结束会话',
  'pane.closeSessionConfirm': '结束此会话？其代理将停止，会话变为只读。',
  'pane.empty': '向代理打个招呼开始吧。',
  'pane.readOnly': '此会话已结束，只读。',
  'pane.resume': '恢复代理',
  'pane.resuming': '正在恢复…',
  'pane.needsResume': '代理未在运行。发送消息时会自动重启，也可以现在恢复。',
  'pane.notResumable': '此代理无法恢复之前的会话——请新建会话',
  'pane.startNew': '新建会话',
  'pane.agentUnavailable': '此会话的代理在本机不可用——请新建会话',
  'pane.cwdMissing': '此会话的工作目录已不存在——请新建会话',
  'pane.conversation': '对话',
  'pane.contextLost': '代理未能恢复此对话的记忆；它将在没有先前上下文的情况下继续。',
  'pane.dismiss': '关闭',
  'pane.sessionLabel': '会话 {name}',

  'composer.placeholder': '给代理发消息——Enter 发送，Shift+Enter 换行',
  'composer.label': '消息',
  'composer.send': '发送',
  'composer.cancel': '取消',
  'composer.cancelling': '正在取消…',
  'composer.starting': '正在等待代理启动…',
  'composer.hint': 'Enter 发送 · Shift+Enter 换行 · Esc 取消当前回合',
  'composer.working': '代理正在工作…',

  'msg.you': '你',
  'msg.agent': '代理',
  'msg.thought': '思考',
  'msg.sending': '发送中…',
  'msg.failed': '未发送：{error}',
  'msg.retry': '重试',
  'msg.discard': '丢弃',
  'turn.queuedLabel': '排队中',
  'turn.withdraw': '撤回',
  'turn.continued': '中断后继续',
  'turn.cancelled': '回合已取消',
  'turn.failed': '回合失败：{error}',
  'turn.interrupted': '回合被中断（{reason}）',

  'tool.status.pending': '等待中',
  'tool.status.in_progress': '运行中',
  'tool.status.completed': '完成',
  'tool.status.failed': '失败',
  'tool.interrupted': '已中断',
  'tool.input': '输入',
  'tool.output': '输出',
  'tool.details': '{title} 的详情',

  'plan.title': '计划',

  'perm.title': '代理请求权限',
  'perm.deny': '拒绝请求',
  'perm.selected': '已回答：{option}',
  'perm.cancelled': '请求已取消',
  'perm.expired': '请求已过期',

  'banner.interrupted_prompt': '你的上一条消息在代理回答之前被中断了。',
  'banner.interrupted_turn': '代理在处理你的上一条消息时被中断了。',
  'banner.degraded_history': '此对话的部分历史记录缺失，无法自动继续。请发送新消息以继续。',
  'banner.reason': '原因：{reason}。',
  'banner.tools': '被中断的工具调用（将以失败告知代理）：{tools}。',
  'banner.continue': '继续',
  'banner.continueLabel': '继续被中断的回合',
  'banner.sending': '正在继续…',
  'banner.refreshing': '正在检查会话…',
  'banner.unknown': '无法确认继续是否已开始（{error}）。不会自动重试；守护进程回报后此处会更新。',
  'banner.checkAgain': '再次检查',
  'banner.cannot': '目前无法继续（{reason}）。',
  'banner.declined': '守护进程拒绝了上一次尝试（{reason}）。',
  'banner.label': '被中断的回合',

  'reason.daemon_restart': '守护进程重启',
  'reason.agent_exited': '代理进程退出',
  'reason.agent_crashed': '代理进程崩溃',

  'new.title': '新建会话',
  'new.task': '任务',
  'new.newTask': '新任务',
  'new.taskTitle': '任务标题',
  'new.taskTitlePlaceholder': '这是关于什么的？（可选）',
  'new.agent': '代理',
  'new.unavailable': '不可用：{reason}',
  'new.cwd': '工作目录',
  'new.cwdHint': '守护进程所在机器上已存在的目录，例如 /home/you/project。',
  'new.prompt': '第一条消息（可选）',
  'new.create': '开始会话',
  'new.creating': '正在开始…',
  'new.cancel': '取消',
  'new.noAgents': '没有可用的代理配置。',
  'new.resumes': '可恢复会话',
  'new.noResume': '无法恢复会话',
};

const dicts: Record<Lang, Record<MessageKey, string>> = { en, zh };

export function translate(lang: Lang, key: MessageKey, params?: Record<string, string | number>): string {
  let s = dicts[lang][key] ?? en[key] ?? key;
  if (params) for (const [k, v] of Object.entries(params)) s = s.split(`{${k}}`).join(String(v));
  return s;
}

/** A known cause in the user's language, else the daemon's code. */
export function reasonText(lang: Lang, reason: string | undefined): string {
  if (!reason) return '';
  const key = `reason.${reason}` as MessageKey;
  return key in en ? translate(lang, key) : reason.replace(/_/g, ' ');
}

export function detectLang(): Lang {
  const n = typeof navigator !== 'undefined' ? navigator.language || '' : '';
  return n.toLowerCase().startsWith('zh') ? 'zh' : 'en';
}

export type T = (key: MessageKey, params?: Record<string, string | number>) => string;

export const LangContext = createContext<Lang>('en');

export function useT(): { t: T; lang: Lang } {
  const lang = useContext(LangContext);
  return { lang, t: (key, params) => translate(lang, key, params) };
}

import { useT } from '../i18n';
import type { SessionOptionsView } from '../state/types';

export interface SessionOptionsProps {
  options: SessionOptionsView;
  disabled: boolean;
  onSetMode: (modeId: string) => void;
  onSetConfig: (optionId: string, value: string | boolean) => void;
}

/** The agent's mode picker and config option selects, next to the composer. Nothing when the agent announced none. */
export function SessionOptions({ options, disabled, onSetMode, onSetConfig }: SessionOptionsProps) {
  const { t } = useT();
  if (options.modes.length === 0 && options.configOptions.length === 0) return null;
  return (
    <div class="session-options" data-testid="session-options">
      {options.modes.length > 0 && (
        <label class="session-options__item">
          <span class="muted">{t('composer.mode')}</span>
          <select
            value={options.currentMode ?? ''}
            disabled={disabled}
            data-testid="mode-picker"
            onChange={(e) => onSetMode((e.currentTarget as HTMLSelectElement).value)}
          >
            {options.currentMode === undefined && <option value="" />}
            {options.modes.map((m) => (
              <option key={m.id} value={m.id} title={m.description}>
                {m.name}
              </option>
            ))}
          </select>
        </label>
      )}
      {options.configOptions.map((o) =>
        o.type === 'select' ? (
          <label key={o.id} class="session-options__item">
            <span class="muted">{o.name}</span>
            <select
              value={o.value}
              disabled={disabled}
              data-testid={`config-${o.id}`}
              onChange={(e) => onSetConfig(o.id, (e.currentTarget as HTMLSelectElement).value)}
            >
              {o.choices.map((c) => (
                <option key={c.value} value={c.value}>
                  {c.name}
                </option>
              ))}
            </select>
          </label>
        ) : (
          <label key={o.id} class="session-options__item">
            <input
              type="checkbox"
              checked={o.value}
              disabled={disabled}
              data-testid={`config-${o.id}`}
              onChange={(e) => onSetConfig(o.id, (e.currentTarget as HTMLInputElement).checked)}
            />
            <span class="muted">{o.name}</span>
          </label>
        ),
      )}
    </div>
  );
}

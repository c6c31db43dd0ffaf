import { useState } from 'preact/hooks';
import { useT } from '../i18n';

export function TokenGate({ rejected, onToken }: { rejected?: boolean; onToken: (token: string) => void }) {
  const { t } = useT();
  const [value, setValue] = useState('');
  return (
    <main class="gate">
      <form
        class="gate__box"
        onSubmit={(e) => {
          e.preventDefault();
          if (value.trim()) onToken(value.trim());
        }}
      >
        <div class="brand brand--big" aria-hidden="true">
          <span class="brand__mark">T</span>
        </div>
        <h1>{t('token.title')}</h1>
        <p>{t('token.explain')}</p>
        {rejected && (
          <p class="notice notice--error" role="alert">
            {t('token.rejected')}
          </p>
        )}
        <label class="field">
          <span class="field__label">{t('token.label')}</span>
          <input type="password" class="mono" value={value} autoComplete="off" onInput={(e) => setValue((e.currentTarget as HTMLInputElement).value)} />
        </label>
        <button type="submit" class="btn btn--primary" disabled={!value.trim()}>
          {t('token.connect')}
        </button>
      </form>
    </main>
  );
}

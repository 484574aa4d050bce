// The queue's settings on its page: what getQueue says, editable in place and saved through
// updateQueue (only the fields changed are sent). Trunk's settings first, then Railyard's
// flake-aware and risk-aware extensions (flakyPolicy, flakyReportGraceSeconds,
// flakyRetries, probationThreshold), each with a one-line hint of what it does. The testing
// timeout is minutes or "auto" (a checkbox beside the number; the number then shows the timeout in force).
import { useState } from 'preact/hooks';
import { api, mayChange, type GetQueueResponse, type Repo } from './api.js';
import { Section } from './ui.js';

type Kind = 'int' | 'bool' | 'policy' | 'threshold' | 'timeout';
interface Field {
  key: keyof GetQueueResponse & string;
  label: string;
  kind: Kind;
  min?: number;
  max?: number;
  hint: string;
  extension?: boolean;
}

const FIELDS: Field[] = [
  { key: 'concurrency', label: 'Concurrency', kind: 'int', min: 1, hint: 'test runs at once' },
  { key: 'testingTimeoutMinutes', label: 'Testing timeout (minutes)', kind: 'timeout', min: 0, hint: '0 = none; auto follows the CI' },
  { key: 'pendingFailureDepth', label: 'Pending failure depth', kind: 'int', min: 0, hint: 'runs behind a failure to wait for' },
  { key: 'canOptimisticallyMerge', label: 'Optimistic merging', kind: 'bool', hint: 'a passing run also lands the failed ones ahead' },
  { key: 'batch', label: 'Batching', kind: 'bool', hint: 'test several PRs in one run' },
  { key: 'batchingMinSize', label: 'Batch size', kind: 'int', min: 1, hint: 'PRs per batch' },
  { key: 'flakyPolicy', label: 'Flaky policy', kind: 'policy', hint: 'failing tests that do not fail a run', extension: true },
  { key: 'flakyReportGraceSeconds', label: 'Test report grace (seconds)', kind: 'int', min: 0, max: 3600, hint: 'wait for the results of a failed check', extension: true },
  { key: 'flakyRetries', label: 'Flaky retries', kind: 'int', min: 0, max: 3, hint: 'retries of a failure of known-flaky tests only', extension: true },
  { key: 'probationThreshold', label: 'Probation threshold', kind: 'threshold', min: 0, max: 1, hint: 'risk above which a PR is tested alone first; empty = off', extension: true },
];

type Values = Record<string, string | boolean>;

/** The form's text for a setting's value (numbers as text, null as empty). */
function valuesOf(queue: GetQueueResponse): Values {
  const out: Values = {};
  for (const f of FIELDS) {
    const v = (queue as unknown as Record<string, unknown>)[f.key];
    out[f.key] = f.kind === 'bool' ? v === true : v === null || v === undefined ? '' : String(v);
  }
  return out;
}

/** The updateQueue body for the changed fields, or the first problem as one line naming the field. */
function patchOf(before: Values, now: Values): { patch: Record<string, unknown> } | { error: string } {
  const patch: Record<string, unknown> = {};
  for (const f of FIELDS) {
    const v = now[f.key];
    if (v === before[f.key]) continue;
    if (f.kind === 'bool' || f.kind === 'policy') {
      patch[f.key] = v;
      continue;
    }
    const text = String(v).trim();
    if (f.kind === 'timeout' && text === 'auto') {
      patch[f.key] = 'auto';
      continue;
    }
    if (f.kind === 'threshold' && text === '') {
      patch[f.key] = null;
      continue;
    }
    const n = Number(text);
    const integer = f.kind === 'int' || f.kind === 'timeout';
    if (text === '' || !Number.isFinite(n) || (integer && !Number.isInteger(n)) || (f.min !== undefined && n < f.min) || (f.max !== undefined && n > f.max))
      return { error: `${f.key}: ${integer ? 'a whole number' : 'a number'}${f.min !== undefined ? ` from ${f.min}` : ''}${f.max !== undefined ? ` to ${f.max}` : ''}` };
    patch[f.key] = n;
  }
  return { patch };
}

/** Minutes, or "auto" ticked: the number then shows the timeout in force and cannot be typed in. */
function TimeoutInput({ id, value, now, onChange }: { id: string; value: string; now?: number; onChange: (value: string) => void }) {
  const auto = value === 'auto';
  return (
    <span>
      <input
        id={id}
        type="number"
        inputMode="numeric"
        step={1}
        min={0}
        disabled={auto}
        value={auto ? (now === undefined ? '' : String(now)) : value}
        onInput={(e) => onChange((e.target as HTMLInputElement).value)}
      />{' '}
      <label>
        <input
          type="checkbox"
          checked={auto}
          onChange={(e) => onChange((e.target as HTMLInputElement).checked ? 'auto' : String(now ?? 60))}
        />{' '}
        auto
      </label>
    </span>
  );
}

export function QueueSettings({ repo, branch, queue }: { repo: Repo; branch: string; queue: GetQueueResponse }) {
  const current = valuesOf(queue);
  // What the form started from, and what was typed; the poll's new answers do not overwrite typing.
  const [edit, setEdit] = useState<{ from: Values; now: Values } | null>(null);
  const [note, setNote] = useState<{ ok: boolean; text: string } | null>(null);
  const [saving, setSaving] = useState(false);
  const values = edit?.now ?? current;
  const set = (key: string, value: string | boolean) => {
    setNote(null);
    setEdit({ from: edit?.from ?? current, now: { ...values, [key]: value } });
  };
  const save = async (event: Event) => {
    event.preventDefault();
    if (!edit) return;
    const result = patchOf(edit.from, edit.now);
    if ('error' in result) return setNote({ ok: false, text: result.error });
    if (Object.keys(result.patch).length === 0) return setEdit(null);
    setSaving(true);
    try {
      await api.updateQueue(repo, branch, result.patch);
      setEdit(null);
      setNote({ ok: true, text: `Saved: ${Object.keys(result.patch).join(', ')}.` });
    } catch (error) {
      setNote({ ok: false, text: error instanceof Error ? error.message : String(error) });
    } finally {
      setSaving(false);
    }
  };
  // A token without the settings permission sees the settings but cannot change them.
  const readOnly = !mayChange('settings');
  return (
    <Section title="Settings" id="settings-h">
      <form class="settings" onSubmit={save} aria-label="Queue settings" noValidate>
        <fieldset disabled={readOnly} class="plain">
        {FIELDS.map((f) => {
          const id = `setting-${f.key}`;
          const v = values[f.key];
          return (
            <div class="setting" key={f.key}>
              <label for={id}>
                {f.label}
                {f.extension && <span class="muted small" title="Railyard extension"> (ext.)</span>}
              </label>
              {f.kind === 'bool' ? (
                <input id={id} type="checkbox" checked={v === true} onChange={(e) => set(f.key, (e.target as HTMLInputElement).checked)} />
              ) : f.kind === 'policy' ? (
                <select id={id} value={String(v)} onChange={(e) => set(f.key, (e.target as HTMLSelectElement).value)}>
                  <option value="off">off</option>
                  <option value="ignore_quarantined">ignore quarantined</option>
                  <option value="ignore_flaky">ignore flaky</option>
                </select>
              ) : f.kind === 'timeout' ? (
                <TimeoutInput id={id} value={String(v)} now={queue.testingTimeoutMinutesNow} onChange={(value) => set(f.key, value)} />
              ) : (
                <input
                  id={id}
                  type="number"
                  inputMode={f.kind === 'int' ? 'numeric' : 'decimal'}
                  step={f.kind === 'int' ? 1 : 0.01}
                  min={f.min}
                  max={f.max}
                  value={String(v)}
                  onInput={(e) => set(f.key, (e.target as HTMLInputElement).value)}
                />
              )}
              <span class="muted small">{f.hint}</span>
            </div>
          );
        })}
        </fieldset>
        {readOnly ? (
          <p class="muted small" data-testid="settings-read-only">
            This token may not change settings: it lacks the settings permission (railyard token create --permission settings).
          </p>
        ) : (
          <p>
            <button type="submit" disabled={!edit || saving}>
              {saving ? 'Saving…' : 'Save settings'}
            </button>{' '}
            {edit && (
              <button type="button" class="link" onClick={() => (setEdit(null), setNote(null))}>
                discard changes
              </button>
            )}
          </p>
        )}
        {note && (
          <p class={note.ok ? 'muted' : 'error'} role={note.ok ? 'status' : 'alert'} data-testid="settings-note">
            {note.text}
          </p>
        )}
      </form>
    </Section>
  );
}

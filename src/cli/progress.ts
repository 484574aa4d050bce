/** Progress on stderr for long client commands: a spinner on a terminal, plain lines otherwise. */
import { printable } from './escape.js';

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/**
 * Progress on stderr: an animated spinner on a terminal, otherwise a plain line at most every
 * `plainEveryMs` (so logs of cron jobs and CI stay readable).
 */
export class Progress {
  private timer: NodeJS.Timeout | null = null;
  private frame = 0;
  private text = '';
  private lastPlain = 0;
  private readonly tty: boolean;

  constructor(
    private readonly stream: NodeJS.WriteStream = process.stderr,
    private readonly plainEveryMs = 10_000,
    enabled = true,
  ) {
    this.tty = enabled && Boolean(stream.isTTY) && process.env.TERM !== 'dumb';
    this.enabled = enabled;
  }

  private readonly enabled: boolean;

  update(text: string): void {
    text = printable(text);
    this.text = text;
    if (!this.enabled) return;
    if (this.tty) {
      if (!this.timer) {
        this.timer = setInterval(() => this.draw(), 80);
        this.timer.unref();
      }
      this.draw();
    } else if (Date.now() - this.lastPlain >= this.plainEveryMs) {
      this.lastPlain = Date.now();
      this.stream.write(`${text}\n`);
    }
  }

  /** A line that stays (a state change), printed above the spinner. */
  log(line: string): void {
    line = printable(line);
    if (this.tty) this.stream.write('\r\x1b[K');
    this.stream.write(`${line}\n`);
    if (this.tty && this.timer) this.draw();
  }

  private draw(): void {
    this.frame = (this.frame + 1) % FRAMES.length;
    this.stream.write(`\r\x1b[K${FRAMES[this.frame]} ${this.text}`);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.tty) this.stream.write('\r\x1b[K');
  }
}

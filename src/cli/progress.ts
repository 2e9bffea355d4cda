/**
 * Progress for long CLI work (model download, synthetic model write, model load). Hand-written:
 * the two modes below are a few lines each, and a bar package would not help with the non-TTY
 * mode, which is the one CI logs see.
 */

/** Where non-TTY progress lines go when given; a pino logger fits. */
export interface ProgressLogger {
    info(message: string): void;
}

export interface ProgressReporterOptions {
    /** Leads every line, e.g. "Downloading maple-preview". */
    label: string;
    /** Defaults to process.stderr. A TTY gets a redrawn bar; anything else gets plain lines. */
    stream?: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
    /** When given, non-TTY lines go to `logger.info` instead of `stream`. The TTY bar always uses `stream`. */
    logger?: ProgressLogger;
    /** Defaults to true: `done`/`total` are bytes, shown as MB with a speed. False shows percent and ETA only. */
    showBytes?: boolean;
    /** Clock in milliseconds; defaults to Date.now. For tests. */
    now?: () => number;
}

export interface ProgressReporter {
    /** Reports `done` out of `total` (total 0 = unknown). Calls after `done()` are ignored. */
    update(done: number, total: number): void;
    /** Ends the progress with a final line: `message`, or the elapsed time. Only the first call counts. */
    done(message?: string): void;
}

const ttyRedrawIntervalMs = 100;
const lineIntervalMs = 5_000;
const linePercentStep = 10;
const barWidth = 24;
const bytesPerMegabyte = 1_000_000;

/**
 * Creates a progress reporter. On a TTY: one line redrawn in place (at most 10 times a second)
 * with a bar, percent, MB done/total, speed and ETA. Otherwise (CI, piped logs): one line each
 * time progress crosses a 10% step or 5 s have passed, then a final line.
 */
export function createProgressReporter(options: ProgressReporterOptions): ProgressReporter {
    const { label, stream = process.stderr, logger, showBytes = true, now = Date.now } = options;
    const isTty = stream.isTTY === true;
    const startedAt = now();
    // Speed counts from the first update, so the bytes a resumed download already had don't inflate it.
    let first: { at: number; done: number } | undefined;
    let latest = { done: 0, total: 0 };
    let lastOutputAt = -Infinity;
    let lastStep = -1;
    let finished = false;

    function writeLine(line: string): void {
        if (logger) logger.info(line);
        else stream.write(line + "\n");
    }

    function describe(done: number, total: number): string {
        const parts: string[] = [];
        if (total > 0) parts.push(`${Math.floor(percentOf(done, total))}%`);
        if (showBytes) parts.push(total > 0 ? `${megabytes(done)}/${megabytes(total)} MB` : `${megabytes(done)} MB`);
        const rate = first ? (done - first.done) / Math.max((now() - first.at) / 1000, 1e-3) : 0;
        if (showBytes && rate > 0) parts.push(`${megabytes(rate)} MB/s`);
        if (total > 0 && rate > 0 && done < total) parts.push(`ETA ${formatSeconds((total - done) / rate)}`);
        return parts.join(", ");
    }

    return {
        update(done, total) {
            if (finished) return;
            const at = now();
            first ??= { at, done };
            latest = { done, total };
            if (isTty) {
                if (at - lastOutputAt < ttyRedrawIntervalMs) return;
                lastOutputAt = at;
                const bar = total > 0 ? `[${renderBar(done / total)}] ` : "";
                // A line wider than the terminal wraps, and \r then only redraws its last row.
                const line = `${label} ${bar}${describe(done, total)}`.slice(0, (stream.columns ?? Infinity) - 1);
                stream.write(`\r\x1b[2K${line}`);
                return;
            }
            const step = total > 0 ? Math.floor(percentOf(done, total) / linePercentStep) : -1;
            if (step > lastStep || at - lastOutputAt >= lineIntervalMs) {
                lastStep = Math.max(step, lastStep);
                lastOutputAt = at;
                writeLine(`${label}: ${describe(done, total)}`);
            }
        },
        done(message) {
            if (finished) return;
            finished = true;
            const elapsed = formatSeconds((now() - startedAt) / 1000);
            const size = showBytes && latest.done > 0 ? `, ${megabytes(latest.done)} MB` : "";
            const line = `${label}: ${message ?? `done in ${elapsed}${size}`}`;
            if (isTty) stream.write(`\r\x1b[2K${line}\n`);
            else writeLine(line);
        }
    };
}

function percentOf(done: number, total: number): number {
    return Math.min(100, Math.max(0, (done / total) * 100));
}

function renderBar(fraction: number): string {
    const filled = Math.round(Math.min(1, Math.max(0, fraction)) * barWidth);
    return "#".repeat(filled) + "-".repeat(barWidth - filled);
}

function megabytes(bytes: number): string {
    return (bytes / bytesPerMegabyte).toFixed(1);
}

function formatSeconds(seconds: number): string {
    if (!Number.isFinite(seconds)) return "?";
    if (seconds < 59.5) return `${seconds.toFixed(seconds < 10 ? 1 : 0)}s`;
    const rounded = Math.round(seconds);
    const minutes = Math.floor(rounded / 60);
    if (minutes < 60) return `${minutes}m${String(rounded % 60).padStart(2, "0")}s`;
    return `${Math.floor(minutes / 60)}h${String(minutes % 60).padStart(2, "0")}m`;
}

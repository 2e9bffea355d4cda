import assert from "node:assert/strict";

/**
 * Prometheus' text exposition, parsed: every sample by its series (`name` or `name{label="v",…}`,
 * labels as the server wrote them), and the `# TYPE` of every metric family.
 */
export class Exposition {
    readonly samples = new Map<string, number>();
    readonly types = new Map<string, string>();

    constructor(text: string) {
        for (const line of text.split("\n")) {
            if (line === "") continue;
            const type = /^# TYPE (\S+) (\S+)$/.exec(line);
            if (type !== null) {
                this.types.set(type[1]!, type[2]!);
                continue;
            }
            if (line.startsWith("#")) continue;
            const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{.*\})?) (\S+)(?: \d+)?$/.exec(line);
            assert.ok(sample !== null, `not a Prometheus sample line: ${line}`);
            // Go's ParseFloat, which Prometheus uses, takes "NaN" in any case (prom-client writes "Nan").
            const isNaNText = /^nan$/i.test(sample[2]!);
            const value = isNaNText ? NaN : Number(sample[2] === "+Inf" ? Infinity : sample[2] === "-Inf" ? -Infinity : sample[2]);
            assert.ok(!Number.isNaN(value) || isNaNText, `not a sample value: ${line}`);
            this.samples.set(sample[1]!, value);
        }
    }

    /**
     * The sum of the series of `name` whose labels include `labels` (e.g. every model's
     * `maple:generation_tokens_total`, or one model's with `{ model: "…" }`). Fails when none is there.
     */
    value(name: string, labels: Record<string, string> = {}): number {
        const matching = this.matching(name, labels);
        assert.ok(matching.length > 0, `no series ${name}${JSON.stringify(labels)} in the exposition`);
        return matching.reduce((sum, [, value]) => sum + value, 0);
    }

    /** A histogram's `_count`, `_sum` and cumulative buckets (by upper bound, `+Inf` last), summed over the series whose labels include `labels`. */
    histogram(name: string, labels: Record<string, string> = {}): { count: number; sum: number; buckets: [string, number][] } {
        assert.equal(this.types.get(name), "histogram", `${name} is a histogram`);
        const buckets = new Map<string, number>();
        for (const [seriesLabels, value] of this.matching(`${name}_bucket`, labels)) {
            const bound = seriesLabels["le"]!;
            buckets.set(bound, (buckets.get(bound) ?? 0) + value);
        }
        return { count: this.value(`${name}_count`, labels), sum: this.value(`${name}_sum`, labels), buckets: [...buckets] };
    }

    private matching(name: string, labels: Record<string, string>): [Record<string, string>, number][] {
        const found: [Record<string, string>, number][] = [];
        for (const [series, value] of this.samples) {
            const parsed = /^([^{]+)(?:\{(.*)\})?$/.exec(series)!;
            if (parsed[1] !== name) continue;
            const seriesLabels = Object.fromEntries([...(parsed[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((pair) => [pair[1]!, pair[2]!]));
            if (Object.entries(labels).every(([key, wanted]) => seriesLabels[key] === wanted)) found.push([seriesLabels, value]);
        }
        return found;
    }
}

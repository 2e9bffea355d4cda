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

    /** The value of one series; `labels` in the order the server writes them. Fails when absent. */
    value(name: string, labels: Record<string, string> = {}): number {
        const entries = Object.entries(labels);
        const series = entries.length === 0 ? name : `${name}{${entries.map(([key, value]) => `${key}="${value}"`).join(",")}}`;
        const value = this.samples.get(series);
        assert.ok(value !== undefined, `no series ${series} in the exposition`);
        return value;
    }

    /** A histogram's `_count`, `_sum` and cumulative buckets (by upper bound, `+Inf` last). */
    histogram(name: string): { count: number; sum: number; buckets: [string, number][] } {
        assert.equal(this.types.get(name), "histogram", `${name} is a histogram`);
        const prefix = `${name}_bucket{le="`;
        const buckets = [...this.samples].filter(([series]) => series.startsWith(prefix))
            .map(([series, value]): [string, number] => [series.slice(prefix.length, -2), value]);
        return { count: this.value(`${name}_count`), sum: this.value(`${name}_sum`), buckets };
    }
}

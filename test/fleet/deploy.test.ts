import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { Ajv } from "ajv";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { StatefulSet } from "kubernetes-models/apps/v1/StatefulSet";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { PersistentVolumeClaim } from "kubernetes-models/v1/PersistentVolumeClaim";
import { Service } from "kubernetes-models/v1/Service";
import { parseAllDocuments, parse as parseYaml } from "yaml";
import { defaultCacheRamMiB, settings } from "../../src/config/settings.js";
import { MapleMetrics } from "../../src/metrics/metrics.js";
import { Exposition } from "../helpers/prometheus.js";

/**
 * The shipped deploy/ files, checked without a cluster: Kubernetes objects against the API
 * schemas of kubernetes-models, the InferencePool and the endpoint picker's configuration
 * against their field lists, names against Maple's own settings and metrics, and the HAProxy and
 * NGINX files with the balancers' own syntax checks.
 */

const deployDir = new URL("../../../deploy/", import.meta.url).pathname;
const read = (path: string): string => readFileSync(join(deployDir, path), "utf8");

interface KubeObject {
    apiVersion: string;
    kind: string;
    metadata: { name: string; labels?: Record<string, string> };
    [field: string]: unknown;
}

function objects(path: string): KubeObject[] {
    return parseAllDocuments(read(path)).map((document) => {
        assert.deepEqual(document.errors, [], `${path} parses`);
        return document.toJS() as KubeObject;
    });
}

const models: Record<string, new (data: never) => { validate(): void }> = {
    "apps/v1/Deployment": Deployment,
    "apps/v1/StatefulSet": StatefulSet,
    "v1/Service": Service,
    "v1/ConfigMap": ConfigMap,
    "v1/PersistentVolumeClaim": PersistentVolumeClaim,
    "autoscaling/v2/HorizontalPodAutoscaler": HorizontalPodAutoscaler
};

const kubernetesFiles = ["kubernetes/maple.yaml", "kubernetes/hpa.yaml", "kubernetes/inference-pool.yaml", "kubernetes/redis.yaml"];
const all = kubernetesFiles.flatMap(objects);
const find = (kind: string, name?: string): KubeObject => {
    const found = all.find((object) => object.kind === kind && (name === undefined || object.metadata.name === name));
    assert.ok(found !== undefined, `deploy/kubernetes has a ${kind}`);
    return found;
};

interface Container {
    env: { name: string; value?: string }[];
    ports: { name: string; containerPort: number }[];
    resources: { requests: { cpu: string; memory: string }; limits: { memory: string } };
    volumeMounts: { name: string; mountPath: string }[];
    readinessProbe: { httpGet: { path: string; port: string } };
    livenessProbe: { httpGet: { path: string; port: string } };
    lifecycle: { preStop: { exec: { command: string[] } } };
}
const deployment = find("Deployment") as KubeObject & {
    spec: { template: { metadata: { labels: Record<string, string> }; spec: {
        terminationGracePeriodSeconds: number; containers: Container[]; volumes: { name: string; emptyDir?: { medium?: string; sizeLimit?: string } }[];
    }; }; };
};
const container = deployment.spec.template.spec.containers[0]!;
const env = (name: string): string => {
    const variable = container.env.find((entry) => entry.name === name);
    assert.ok(variable?.value !== undefined, `the Deployment sets ${name}`);
    return variable.value;
};

// Field lists of inference.networking.k8s.io/v1 InferencePool (api/v1/inferencepool_types.go of
// the Gateway API Inference Extension); no npm package carries this schema.
const port = { type: "object", properties: { number: { type: "integer", minimum: 1, maximum: 65535 } }, required: ["number"], additionalProperties: false };
const inferencePoolSchema = {
    type: "object",
    required: ["apiVersion", "kind", "metadata", "spec"],
    properties: {
        apiVersion: { const: "inference.networking.k8s.io/v1" },
        kind: { const: "InferencePool" },
        metadata: { type: "object", required: ["name"] },
        spec: {
            type: "object",
            required: ["selector", "targetPorts", "endpointPickerRef"],
            additionalProperties: false,
            properties: {
                selector: {
                    type: "object", required: ["matchLabels"], additionalProperties: false,
                    properties: { matchLabels: { type: "object", additionalProperties: { type: "string" }, minProperties: 1 } }
                },
                targetPorts: { type: "array", items: port, minItems: 1, maxItems: 8 },
                appProtocol: { enum: ["http", "kubernetes.io/h2c"] },
                endpointPickerRef: {
                    type: "object", required: ["name"], additionalProperties: false,
                    properties: {
                        group: { type: "string" }, kind: { type: "string" }, name: { type: "string", minLength: 1 },
                        port, failureMode: { enum: ["FailOpen", "FailClose"] }
                    }
                }
            }
        }
    }
};

// llm-d-router's EndpointPickerConfig and its core-metrics-extractor parameters (engineConfigParams).
const engineConfigFields = new Set(["name", "queuedRequestsSpec", "runningRequestsSpec", "kvUsageSpec", "loraSpec", "cacheInfoSpec",
    "cacheBlockSizeLabelName", "cacheNumBlocksLabelName", "cacheBlockSizeSpec", "cacheNumBlocksSpec", "customMetrics"]);

interface PickerConfig {
    apiVersion: string;
    kind: string;
    plugins: { type: string; name?: string; parameters?: Record<string, unknown> }[];
    dataLayer?: { sources: { pluginRef: string; extractors?: { pluginRef: string }[] }[] };
    schedulingProfiles: { name: string; plugins: { pluginRef: string; weight?: number }[] }[];
}

async function mapleMetricTypes(): Promise<Map<string, string>> {
    const metrics = new MapleMetrics({ readModels: () => [] });
    return new Exposition(await metrics.expose()).types;
}

describe("deploy/kubernetes", () => {
    it("holds only objects that kubernetes-models' API schemas accept", () => {
        for (const object of all) {
            const key = `${object.apiVersion}/${object.kind}`;
            if (object.kind === "InferencePool" || object.kind === "HTTPRoute") continue;
            const Model = models[key];
            assert.ok(Model !== undefined, `no schema checked for ${key}`);
            assert.doesNotThrow(() => new Model(object as never).validate(), `${key} ${object.metadata.name}`);
        }
        // The check catches a mistyped field's type, so a pass means something.
        const broken = structuredClone(deployment);
        (broken.spec.template.spec.containers[0]!.ports[0] as { containerPort: unknown }).containerPort = "eighty";
        assert.throws(() => new Deployment(broken as never).validate());
    });

    it("sets only Maple's own settings, matches threads to CPUs, and gives termination time for preStop + drain + grace", () => {
        const known = new Set(settings.map((setting) => setting.env));
        for (const variable of container.env) assert.ok(known.has(variable.name), `${variable.name} is a Maple setting`);
        assert.equal(env("MAPLE_THREADS"), container.resources.requests.cpu);
        assert.equal(env("MAPLE_METRICS_PUBLIC"), "true");
        // The response store is the Redis Service of redis.yaml, on its port.
        const redisService = find("Service", "maple-redis") as KubeObject & { spec: { ports: { port: number }[] } };
        assert.equal(env("MAPLE_RESPONSES_STORE"), `redis://${redisService.metadata.name}:${redisService.spec.ports[0]!.port}`);
        assert.equal(container.readinessProbe.httpGet.path, "/health");
        assert.equal(container.livenessProbe.httpGet.path, "/livez");
        const [sleep, seconds] = container.lifecycle.preStop.exec.command;
        assert.equal(sleep, "sleep");
        const needed = Number(seconds) + Number(env("MAPLE_SHUTDOWN_DRAIN")) + Number(env("MAPLE_SHUTDOWN_GRACE"));
        assert.ok(deployment.spec.template.spec.terminationGracePeriodSeconds > needed,
            `terminationGracePeriodSeconds ${deployment.spec.template.spec.terminationGracePeriodSeconds} covers ${needed} s`);
    });

    it("gives /dev/shm the room of the RAM prompt cache that Maple sizes from the pod's memory limit", () => {
        const gibibytes = (quantity: string): number => {
            const match = /^(\d+(?:\.\d+)?)Gi$/.exec(quantity);
            assert.ok(match !== null, `${quantity} is in Gi`);
            return Number(match[1]);
        };
        const mount = container.volumeMounts.find((candidate) => candidate.mountPath === "/dev/shm");
        assert.ok(mount !== undefined, "a volume is mounted at /dev/shm (a container's own is 64 MiB)");
        const volume = deployment.spec.template.spec.volumes.find((candidate) => candidate.name === mount.name);
        assert.equal(volume?.emptyDir?.medium, "Memory");
        // maple-preview's Q4_K_M file, as the manifest's memory comment counts it.
        const cacheMiB = defaultCacheRamMiB(gibibytes(container.resources.limits.memory) * 2 ** 30, 5.6 * 2 ** 30);
        assert.ok(cacheMiB > 0);
        assert.ok(gibibytes(volume.emptyDir.sizeLimit ?? "0Gi") * 1024 >= cacheMiB, `sizeLimit ${volume.emptyDir.sizeLimit} holds ${cacheMiB} MiB`);
    });

    it("scales on maple:num_requests_waiting through the adapter rule", async () => {
        const hpa = find("HorizontalPodAutoscaler") as KubeObject & { spec: { metrics: { pods: { metric: { name: string } } }[] } };
        const adapter = parseYaml((find("ConfigMap", "prometheus-adapter-maple") as KubeObject & { data: Record<string, string> }).data["config.yaml"]!) as {
            rules: { seriesQuery: string; name: { as: string } }[];
        };
        const rule = adapter.rules[0]!;
        assert.equal(hpa.spec.metrics[0]!.pods.metric.name, rule.name.as);
        const series = /^([^{]+)\{/.exec(rule.seriesQuery)?.[1];
        assert.equal(series, "maple:num_requests_waiting");
        assert.equal((await mapleMetricTypes()).get(series), "gauge");
    });

    it("has an InferencePool of the Deployment's pods and an endpoint-picker configuration that maps onto Maple's metrics", async () => {
        const pool = find("InferencePool") as KubeObject & { spec: { selector: { matchLabels: Record<string, string> }; targetPorts: { number: number }[] } };
        const validate = new Ajv({ allErrors: true }).compile(inferencePoolSchema);
        assert.ok(validate(pool), JSON.stringify(validate.errors));
        const podLabels = deployment.spec.template.metadata.labels;
        for (const [label, value] of Object.entries(pool.spec.selector.matchLabels)) assert.equal(podLabels[label], value);
        assert.equal(pool.spec.targetPorts[0]!.number, container.ports[0]!.containerPort);

        const route = find("HTTPRoute") as KubeObject & { spec: { rules: { backendRefs: { group: string; kind: string; name: string }[] }[] } };
        assert.deepEqual(route.spec.rules[0]!.backendRefs[0], { group: "inference.networking.k8s.io", kind: "InferencePool", name: pool.metadata.name });

        const configMap = find("ConfigMap", "maple-epp") as KubeObject & { data: Record<string, string> };
        const config = parseYaml(Object.values(configMap.data)[0]!) as PickerConfig;
        assert.equal(config.apiVersion, "llm-d.ai/v1alpha1");
        assert.equal(config.kind, "EndpointPickerConfig");
        const defined = new Set(config.plugins.map((plugin) => plugin.name ?? plugin.type));
        const references = [
            ...config.schedulingProfiles.flatMap((profile) => profile.plugins.map((plugin) => plugin.pluginRef)),
            ...(config.dataLayer?.sources ?? []).flatMap((source) => [source.pluginRef, ...(source.extractors ?? []).map((extractor) => extractor.pluginRef)])
        ];
        for (const reference of references) assert.ok(defined.has(reference), `pluginRef ${reference} is defined`);

        const extractor = config.plugins.find((plugin) => plugin.type === "core-metrics-extractor")!.parameters as {
            engineLabelKey: string; defaultEngine: string; engineConfigs: Record<string, string>[];
        };
        const engine = extractor.engineConfigs.find((candidate) => candidate.name === extractor.defaultEngine);
        assert.ok(engine !== undefined, "the default engine is configured");
        for (const field of Object.keys(engine)) assert.ok(engineConfigFields.has(field), `${field} is an engineConfigs field`);
        assert.equal(podLabels[extractor.engineLabelKey], engine.name, "the pods carry the engine label");
        const types = await mapleMetricTypes();
        for (const [field, metric] of [["queuedRequestsSpec", "maple:num_requests_waiting"], ["runningRequestsSpec", "maple:num_requests_running"],
            ["kvUsageSpec", "maple:kv_cache_usage_perc"]] as const) {
            assert.equal(engine[field], metric);
            assert.equal(types.get(metric), "gauge", `Maple exports ${metric}`);
        }
    });
});

describe("deploy/haproxy and deploy/nginx", () => {
    const installed = (command: string): boolean => spawnSync("sh", ["-c", `command -v ${command}`]).status === 0;

    it("haproxy -c accepts haproxy.cfg", { skip: !installed("haproxy") && "haproxy is not installed" }, () => {
        const dir = mkdtempSync(join(tmpdir(), "maple-haproxy-check-"));
        const config = read("haproxy/haproxy.cfg").replace(/stats socket \S+/, `stats socket ${join(dir, "stats.sock")}`);
        writeFileSync(join(dir, "haproxy.cfg"), config);
        const result = spawnSync("haproxy", ["-c", "-f", join(dir, "haproxy.cfg")], { encoding: "utf8" });
        assert.equal(result.status, 0, result.stdout + result.stderr);
    });

    it("nginx -t accepts maple.conf inside http { }", { skip: !installed("nginx") && "nginx is not installed" }, () => {
        const dir = mkdtempSync(join(tmpdir(), "maple-nginx-check-"));
        writeFileSync(join(dir, "nginx.conf"), `pid ${join(dir, "nginx.pid")};\nevents {}\nhttp { include ${join(deployDir, "nginx", "maple.conf")}; }\n`);
        const result = spawnSync("nginx", ["-t", "-p", dir, "-c", join(dir, "nginx.conf"), "-e", join(dir, "error.log")], { encoding: "utf8" });
        assert.equal(result.status, 0, result.stdout + result.stderr);
    });
});

describe("deploy/docker", () => {
    it("runs as a non-root user, with /models as a volume and a HEALTHCHECK on /health", () => {
        const dockerfile = read("docker/Dockerfile");
        const user = /^USER (\S+)$/m.exec(dockerfile)?.[1];
        assert.ok(user !== undefined && !/^(root|0)(:|$)/.test(user), `USER ${user}`);
        assert.match(dockerfile, /^VOLUME \/models$/m);
        assert.match(dockerfile, /MAPLE_MODELS_DIR=\/models/);
        assert.match(dockerfile, /^HEALTHCHECK .*\n?.*\/health/m);
    });
});

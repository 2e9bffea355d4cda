import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseServeFlags } from "../../src/cli/serveFlags.js";
import { isSwitch, resolveConfig, settings, type SettingDefinition } from "../../src/config/settings.js";

/** The config `maple serve ...args` starts with, in an empty environment. */
const configOf = (args: string[]) => resolveConfig(parseServeFlags(args).flags, {});

describe("maple serve's flags", () => {
    it("takes a bare boolean flag as true and --no-FLAG as false, as llama-server and vLLM do", () => {
        assert.equal(configOf(["--swa-full"]).swaFull, true);
        assert.equal(configOf(["--no-webui"]).webUi, false);
        assert.equal(configOf(["--no-swa-full"]).swaFull, false);
        // The last one given wins, as for any repeated flag.
        assert.equal(configOf(["--no-webui", "--webui"]).webUi, true);
        assert.equal(configOf(["--webui", "--no-webui"]).webUi, false);
    });

    it("still takes a boolean word after the flag or after =, every word its variable takes", () => {
        for (const [word, value] of [["true", true], ["false", false], ["1", true], ["0", false], ["yes", true], ["no", false],
            ["on", true], ["off", false], ["FALSE", false], ["Yes", true]] as const) {
            assert.equal(configOf(["--webui", word]).webUi, value, `--webui ${word}`);
            assert.equal(configOf([`--webui=${word}`]).webUi, value, `--webui=${word}`);
            assert.equal(configOf(["--swa-full", word, "--port", "9"]).swaFull, value, `--swa-full ${word} --port 9`);
        }
    });

    it("does not let a bare boolean flag swallow the next flag or a word that is not boolean", () => {
        const config = configOf(["--swa-full", "--port", "9", "--strict-model", "--model-id", "m", "--log-prompts"]);
        assert.equal(config.swaFull, true);
        assert.equal(config.port, 9);
        assert.equal(config.strictModel, true);
        assert.equal(config.modelId, "m");
        assert.equal(config.logPrompts, true);
        // A word after it stays a positional, which serve refuses, rather than becoming the flag's value.
        assert.throws(() => parseServeFlags(["--swa-full", "model.gguf"]), /Unexpected argument 'model\.gguf'/);
        assert.throws(() => parseServeFlags(["--swa-full", "maybe"]), /Unexpected argument 'maybe'/);
    });

    it("refuses a word after = that is not boolean, naming the flag, and --no- on a flag that is not boolean", () => {
        assert.throws(() => configOf(["--swa-full=maybe"]), /^ConfigError: --swa-full must be true or false, got "maybe"$/);
        assert.throws(() => configOf(["--swa-full="]), /--swa-full must be true or false/);
        assert.throws(() => parseServeFlags(["--no-port"]), /Unknown option '--no-port'/);
        assert.throws(() => parseServeFlags(["--no-webui=true"]), /Unknown option '--no-webui'/);
    });

    it("leaves the other flags as they were: a value after the flag or after =, --model repeated, --help", () => {
        assert.deepEqual(parseServeFlags(["--port", "9", "--host=0.0.0.0", "--model", "a.gguf", "--model", "b=b.gguf", "-h"]), {
            flags: { port: "9", host: "0.0.0.0", model: "a.gguf,b=b.gguf" },
            help: true
        });
        assert.throws(() => parseServeFlags(["--port"]), /argument missing/);
        // A value flag followed by a switch is a forgotten value, not a value of "--webui".
        assert.throws(() => parseServeFlags(["--api-key", "--webui"]), /argument is ambiguous/);
        assert.throws(() => parseServeFlags(["--", "--swa-full"]), /Unexpected argument '--swa-full'/);
    });

    it("treats every boolean setting of the table as a switch, and only those", () => {
        const switches = (settings as readonly SettingDefinition[]).filter(isSwitch);
        assert.deepEqual(switches.map((setting) => setting.flag),
            settings.filter((setting) => typeof setting.defaultValue() === "boolean").map((setting) => setting.flag));
        for (const setting of switches) {
            const off = resolveConfig(parseServeFlags([`--no-${setting.flag}`]).flags, {});
            const on = resolveConfig(parseServeFlags([`--${setting.flag}`]).flags, {});
            assert.equal(off[setting.key], false, `--no-${setting.flag}`);
            assert.equal(on[setting.key], true, `--${setting.flag}`);
        }
    });

    it("takes --gpu and --gpu-layers (and MAPLE_GPU, MAPLE_GPU_LAYERS): a backend, and auto, max or a count of layers", () => {
        assert.equal(configOf([]).gpu, "auto");
        assert.equal(configOf([]).gpuLayers, "auto");
        assert.equal(configOf(["--gpu", "vulkan", "--gpu-layers", "12"]).gpuLayers, 12);
        assert.equal(configOf(["--gpu=cpu"]).gpu, "cpu");
        assert.equal(configOf(["--gpu-layers", "max"]).gpuLayers, "max");
        assert.equal(configOf(["--gpu-layers", "0"]).gpuLayers, 0);
        assert.deepEqual(resolveConfig({}, { MAPLE_GPU: "cuda", MAPLE_GPU_LAYERS: "auto" }).gpu, "cuda");
        assert.throws(() => configOf(["--gpu", "rocm"]), /^ConfigError: --gpu must be one of auto, cuda, vulkan, metal, cpu, got "rocm"$/);
        assert.throws(() => configOf(["--gpu-layers", "all"]), /^ConfigError: --gpu-layers must be auto, max or a number of layers, got "all"$/);
        assert.throws(() => resolveConfig({}, { MAPLE_GPU_LAYERS: "-1" }), /^ConfigError: MAPLE_GPU_LAYERS must be auto, max or a number of layers, got "-1"$/);
    });
});

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ModelSpecError } from "../../src/models/modelSpecError.js";
import { modelNameOf, servedModelSpecs, splitModelSpecs } from "../../src/models/servedModelSpecs.js";

describe("the models a server serves", () => {
    it("serves the default model under MAPLE_MODEL_ID when no spec is given", () => {
        assert.deepEqual(servedModelSpecs([], "maple-preview"), [{ id: "maple-preview", spec: undefined }]);
    });

    it("names the first model MAPLE_MODEL_ID, the others by their spec, and any by its alias", () => {
        assert.deepEqual(servedModelSpecs(splitModelSpecs("maple-preview:tq1, synthetic:qwen3-tiny,embed=hf:Qwen/Qwen3-Embedding-0.6B-GGUF/Qwen3-Embedding-0.6B-Q8_0.gguf,./models/My.Model.gguf"), "maple-preview"), [
            { id: "maple-preview", spec: "maple-preview:tq1" },
            { id: "qwen3-tiny", spec: "synthetic:qwen3-tiny" },
            { id: "embed", spec: "hf:Qwen/Qwen3-Embedding-0.6B-GGUF/Qwen3-Embedding-0.6B-Q8_0.gguf" },
            { id: "My.Model", spec: "./models/My.Model.gguf" }
        ]);
        assert.deepEqual(servedModelSpecs(["chat=synthetic:maple-tiny"], "maple-preview"), [{ id: "chat", spec: "synthetic:maple-tiny" }]);
    });

    it("never reads a path or an hf: reference with '=' in it as an alias", () => {
        assert.equal(modelNameOf("/data/a=b/model.gguf"), "model");
        assert.deepEqual(servedModelSpecs(["x", "/data/a=b/model.gguf"], "d")[1], { id: "model", spec: "/data/a=b/model.gguf" });
    });

    it("refuses two models of one name, and an alias without a spec", () => {
        assert.throws(() => servedModelSpecs(["synthetic:maple-tiny", "synthetic:qwen3-tiny", "./qwen3-tiny.gguf"], "maple-preview"), ModelSpecError);
        assert.throws(() => servedModelSpecs(["a=synthetic:maple-tiny", "a=synthetic:qwen3-tiny"], "maple-preview"), /Two served models are named 'a'/);
        assert.throws(() => servedModelSpecs(["embed= "], "maple-preview"), /empty spec/);
    });
});

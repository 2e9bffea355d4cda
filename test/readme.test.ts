import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { settings } from "../src/config/settings.js";

const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");

describe("README", () => {
    it("documents every setting's flag and MAPLE_* variable, and the two commands a new user needs", () => {
        for (const setting of settings) {
            assert.ok(readme.includes(`\`--${setting.flag}\``), `README lacks --${setting.flag}`);
            assert.ok(readme.includes(`\`${setting.env}\``), `README lacks ${setting.env}`);
        }
        assert.ok(readme.includes("npm install && npm start"));
        assert.ok(readme.includes("npm install && npm test"));
    });
});

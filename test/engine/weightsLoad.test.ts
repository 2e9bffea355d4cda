import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { chooseWeightsLoad, mallocHugePages, ramCopyShare, type WeightsFacts } from "../../src/engine/weightsLoad.js";

const gib = 2 ** 30;
/** The maple-preview twin's file on a 24 GiB machine with huge pages: the common case. */
const facts = (change: Partial<WeightsFacts> = {}): WeightsFacts => ({ setting: "auto", fileBytes: 5.1 * gib, availableBytes: 20 * gib, hugePages: true, cpu: true, ...change });

describe("how the weights reach llama.cpp", () => {
    it("copied into RAM on a CPU with huge pages when the file fits", () => {
        const load = chooseWeightsLoad(facts());
        assert.equal(load.useMmap, false);
        assert.match(load.reason, /huge pages/);
    });

    it("mapped without huge pages, where a copy would only cost memory", () => {
        const load = chooseWeightsLoad(facts({ hugePages: false }));
        assert.equal(load.useMmap, true);
        assert.match(load.reason, /no huge pages/);
    });

    it("mapped when the file takes more than its share of the available memory, which the kernel may then page", () => {
        assert.equal(chooseWeightsLoad(facts({ fileBytes: ramCopyShare * 20 * gib })).useMmap, false);
        const load = chooseWeightsLoad(facts({ fileBytes: ramCopyShare * 20 * gib + 1 }));
        assert.equal(load.useMmap, true);
        assert.match(load.reason, /16\.0 GiB.*80% of the available memory \(20\.0 GiB\)/);
    });

    it("mapped on a GPU build, which copies the weights to the device anyway", () => {
        assert.equal(chooseWeightsLoad(facts({ cpu: false })).useMmap, true);
    });

    it("as the setting says, whatever the facts", () => {
        assert.deepEqual(chooseWeightsLoad(facts({ setting: "mmap" })), { useMmap: true, reason: "--weights mmap" });
        assert.deepEqual(chooseWeightsLoad(facts({ setting: "ram", hugePages: false, fileBytes: 30 * gib })), { useMmap: false, reason: "--weights ram" });
    });
});

describe("whether malloc gets huge pages", () => {
    const madvise = "always [madvise] never\n";
    it("with glibc.malloc.hugetlb=1 among the tunables, unless THP is off", () => {
        assert.equal(mallocHugePages("glibc.malloc.hugetlb=1", madvise), true);
        assert.equal(mallocHugePages("glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1", "[always] madvise never\n"), true);
        assert.equal(mallocHugePages("glibc.malloc.hugetlb=1", "always madvise [never]\n"), false);
        assert.equal(mallocHugePages("glibc.malloc.hugetlb=1", undefined), false);
    });

    it("with hugetlb=2 (reserved hugetlbfs pages) whatever THP says; not without the tunable or with hugetlb=0", () => {
        assert.equal(mallocHugePages("glibc.malloc.hugetlb=2", "always madvise [never]\n"), true);
        assert.equal(mallocHugePages(undefined, madvise), false);
        assert.equal(mallocHugePages("glibc.malloc.hugetlb=0", madvise), false);
        assert.equal(mallocHugePages("glibc.malloc.hugetlb=10", madvise), false);
    });
});

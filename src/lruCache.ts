/**
 * A map bounded to `capacity` entries that drops the least recently used one. A Map keeps
 * insertion order, so the most recently used entry is moved last and the first is evicted.
 */
export class LruCache<Key, Value> {
    private readonly entries = new Map<Key, Value>();

    constructor(private readonly capacity: number) {}

    get(key: Key): Value | undefined {
        const value = this.entries.get(key);
        if (value !== undefined) {
            this.entries.delete(key);
            this.entries.set(key, value);
        }
        return value;
    }

    set(key: Key, value: Value): void {
        this.entries.delete(key);
        this.entries.set(key, value);
        if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
    }

    get size(): number {
        return this.entries.size;
    }
}

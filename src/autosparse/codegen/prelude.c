/* The C that kernels define before themselves, one section per helper; printer.py includes a section
   where a kernel asks for it (c_ast.Prelude), its ${placeholders} filled in. */
/* @section result_arrays */
static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
/* An array of a result, count + 1 elements (zeroed or not). Large ones are advised onto transparent huge
   pages, as numpy advises its own arrays: a fresh 24 MB result otherwise faults in 6,000 pages. */
static void *resultarray(int64_t count, size_t size, int zeroed) {
    size_t bytes = ((size_t)count + 1) * size;
    void *p = zeroed ? calloc((size_t)count + 1, size) : malloc(bytes);
#ifdef MADV_HUGEPAGE
    if (p && bytes >= ((size_t)1 << 22)) {
        uintptr_t start = ((uintptr_t)p + 4095) & ~(uintptr_t)4095, end = (uintptr_t)p + bytes;
        if (start < end) madvise((void *)start, end - start, MADV_HUGEPAGE);
    }
#endif
    return p;
}
/* @section order_touched */
/* Sort n distinct coordinates ascending by rank: each one's place is the count of those below it. Its
   n^2 comparisons have no data-dependent branch and vectorize, so up to 64 entries it beats insertion
   sort's mispredicted loop exits (3.5x at 25) and the radix sort's passes over its buckets (1.8x at 64).
   Coordinates that repeat would share a place (never one outside the list): callers pass touched sets. */
static void rankcoordinates(int64_t *restrict list, int64_t n, int64_t *restrict spare) {
    if (n < 2) return;  /* sorted already; an empty list may be NULL, which memcpy must not be given */
    for (int64_t k = 0; k < n; k++) {
        const int64_t v = list[k];
        int64_t below = 0;
        for (int64_t m = 0; m < n; m++) below += list[m] < v;
        spare[below] = v;
    }
    memcpy(list, spare, (size_t)n * sizeof(int64_t));
}
/* Insertion sort within a budget of 2n moves, the cheapest sort of a list that arrives nearly in order (a
   stencil's product row: each row of B appends columns just past those already touched; rankcoordinates'
   n^2 comparisons made SpGEMM on 3-D stencils 30% slower). Returns whether it finished: a list further out
   of order is left partly sorted, for rankcoordinates. */
static int insertcoordinates(int64_t *list, int64_t n) {
    int64_t budget = 2 * n;
    for (int64_t k = 1; k < n; k++) {
        int64_t v = list[k], m = k - 1;
        while (m >= 0 && list[m] > v) { list[m + 1] = list[m]; m--; budget--; }
        list[m + 1] = v;
        if (budget < 0) return 0;
    }
    return 1;
}
/* Sort n distinct coordinates ascending. Short lists: insertcoordinates, else (far out of order)
   rankcoordinates. Otherwise an LSD radix sort of the offsets from the smallest through `spare` (n more),
   in as many passes as the range needs (8-bit digits for short lists, 11-bit ones for long). */
static void sortcoordinates(int64_t *list, int64_t n, int64_t *spare) {
    if (n <= 64) {
        if (!insertcoordinates(list, n))
            rankcoordinates(list, n, spare);
        return;
    }
    int64_t lo = list[0], hi = list[0];
    for (int64_t k = 1; k < n; k++) {
        lo = list[k] < lo ? list[k] : lo;
        hi = list[k] > hi ? list[k] : hi;
    }
    const int digit = n < 4096 ? 8 : 11;
    const int64_t buckets = (int64_t)1 << digit, mask = buckets - 1;
    int64_t counts[2049];
    int64_t *from = list, *to = spare;
    for (int64_t k = 0; k < n; k++) list[k] -= lo;
    for (int shift = 0; shift < 64 && ((hi - lo) >> shift) > 0; shift += digit) {
        memset(counts, 0, (size_t)(buckets + 1) * sizeof(int64_t));
        for (int64_t k = 0; k < n; k++) counts[((from[k] >> shift) & mask) + 1]++;
        for (int64_t d = 0; d < buckets; d++) counts[d + 1] += counts[d];
        for (int64_t k = 0; k < n; k++) to[counts[(from[k] >> shift) & mask]++] = from[k];
        int64_t *t = from; from = to; to = t;
    }
    for (int64_t k = 0; k < n; k++) list[k] = from[k] + lo;
}
/* Put the n touched coordinates of `list` (all below `dim`) in ascending order. Lists whose range spans
   fewer summary words than entries: set their bits in a two-level bitmap (`bits`: a bit per coordinate
   below `dim`, then a bit per word of those) and read the nonzero words back in order, clearing them as
   they go. Otherwise (short lists, or few entries spread wide) sortcoordinates. */
static void ordertouched(int64_t *list, int64_t n, int64_t *spare, uint64_t *bits, int64_t dim) {
    if (n <= 32) {
        sortcoordinates(list, n, spare);
        return;
    }
    int64_t lo = list[0], hi = list[0];
    for (int64_t k = 1; k < n; k++) {
        lo = list[k] < lo ? list[k] : lo;
        hi = list[k] > hi ? list[k] : hi;
    }
    if ((hi >> 12) - (lo >> 12) >= n) {
        sortcoordinates(list, n, spare);
        return;
    }
    uint64_t *summary = bits + (dim >> 6) + 1;
    for (int64_t k = 0; k < n; k++) {
        int64_t j = list[k];
        bits[j >> 6] |= (uint64_t)1 << (j & 63);
        summary[j >> 12] |= (uint64_t)1 << ((j >> 6) & 63);
    }
    int64_t m = 0;
    for (int64_t s = lo >> 12; s <= hi >> 12; s++) {
        uint64_t words = summary[s];
        summary[s] = 0;
        while (words) {
            int64_t at = (s << 6) + __builtin_ctzll(words);
            words &= words - 1;
            uint64_t w = bits[at];
            bits[at] = 0;
            const int64_t base = at << 6;
            list[m++] = base + __builtin_ctzll(w);
            for (w &= w - 1; w; w &= w - 1) list[m++] = base + __builtin_ctzll(w);
        }
    }
}
/* @section hash64 */
static inline uint64_t hash64(int64_t key) {
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29);
}
/* @section hashed_workspace */
typedef struct { int64_t key; ${value_type} val; } ${entry};
/* The slot holding `key` in a table of `cap` slots, or the empty one where it would go. */
static inline uint64_t ${probe}(const ${entry} *table, int64_t cap, int64_t key) {
    uint64_t mask = (uint64_t)cap - 1, s = (((uint64_t)key * 0x9E3779B97F4A7C15ULL) >> 32) & mask;
    while (table[s].key != key && table[s].key >= 0) s = (s + 1) & mask;
    return s;
}
/* The slot of `key` in the workspace table, inserted (its value zero) if new, growing the table past
   half full; -1 when memory runs out. */
static int64_t ${insert}(${entry} **table, int64_t **slots, int64_t *cap, int64_t *count, int64_t key) {
    uint64_t s = ${probe}(*table, *cap, key);
    if ((*table)[s].key == key) return (int64_t)s;
    if (2 * (*count + 1) > *cap) {
        int64_t grown = 2 * *cap;
        ${entry} *t2 = malloc((size_t)grown * sizeof(${entry}));
        int64_t *s2 = malloc((size_t)grown * sizeof(int64_t));
        if (!t2 || !s2) return -1;
        for (int64_t k = 0; k < grown; k++) t2[k].key = -1;
        for (int64_t k = 0; k < *count; k++) {
            const ${entry} old = (*table)[(*slots)[k]];
            uint64_t h = ${probe}(t2, grown, old.key);
            t2[h] = old;
            s2[k] = (int64_t)h;
        }
        free(*table); free(*slots);
        *table = t2; *slots = s2; *cap = grown;
        return ${insert}(table, slots, cap, count, key);
    }
    (*table)[s] = (${entry}){key, 0};
    (*slots)[(*count)++] = (int64_t)s;
    return (int64_t)s;
}
/* @section hashed_level_find */
static inline int64_t ${name}(const ${index_type} *pos, const ${index_type} *crd,
                                            int64_t parent, int64_t c) {
    if (parent < 0) return -1;
    int64_t base = pos[parent], size = pos[parent + 1] - base;
    if (size == 0) return -1;
    uint64_t slot = (((uint64_t)c * ${multiplier}ULL) >> 32) & (uint64_t)(size - 1);
    while (crd[base + slot] != (${index_type})c) {
        if (crd[base + slot] < 0) return -1;
        slot = (slot + 1) & (uint64_t)(size - 1);
    }
    return base + (int64_t)slot;
}

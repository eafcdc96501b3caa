/* stackfmt.c — helpers shared by the call-stack writers (stackfmt.h).
 *
 * Owns: frame labels, thread names, UTF-8 decoding of untrusted names, and
 * the merged call tree behind the flame graph: stacks merged root first
 * (one node per distinct path), children ordered by label, each node
 * placed by how many samples lie left of it. Called by folded.c,
 * flamegraph.c and speedscope.c. Plain C; never in a signal handler.
 */
#include "stackfmt.h"

#include <stdlib.h>
#include <string.h>

void sonde__frame_label(sonde_buf_t *out, const sonde_stack_frame_t *frame)
{
    sonde_buf_puts(out, frame->func ? frame->func : "");
    if (!frame->file || !frame->file[0]) return; /* a marker: "<N frames left out>" */
    sonde_buf_puts(out, " (");
    sonde_buf_puts(out, frame->file ? frame->file : "");
    if (frame->line > 0)
        sonde_buf_printf(out, ":%d)", frame->line);
    else
        sonde_buf_putc(out, ')');
}

const char *sonde__thread_name(const sonde_profile_t *prof, int thread)
{
    if (thread < 0 || (size_t)thread >= prof->n_threads || !prof->thread_names[thread]) return "";
    return prof->thread_names[thread];
}

size_t sonde__utf8_decode(const unsigned char *s, size_t avail, uint32_t *cp)
{
    if (avail == 0) return 0;
    unsigned c = s[0];
    size_t n = c < 0x80             ? 1
               : (c & 0xe0) == 0xc0 ? 2
               : (c & 0xf0) == 0xe0 ? 3
               : (c & 0xf8) == 0xf0 ? 4
                                    : 0;
    if (n == 0 || n > avail) return 0;
    uint32_t value = n == 1 ? c : n == 2 ? (c & 0x1f) : n == 3 ? (c & 0x0f) : (c & 0x07);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        value = value << 6 | (s[i] & 0x3fu);
    }
    static const uint32_t lowest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (value < lowest[n] || value > 0x10ffff || (value >= 0xd800 && value <= 0xdfff)) return 0;
    *cp = value;
    return n;
}

/* ---- the call tree ------------------------------------------------------------ */

static uint64_t stackfmt_hash(uint32_t parent, uint32_t key)
{
    uint64_t h = ((uint64_t)parent << 32 | key) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 29);
}

static int stackfmt_index_grow(sonde_tree_t *tree)
{
    size_t cap = tree->index_cap ? tree->index_cap * 2 : 1024;
    uint32_t *index = calloc(cap, sizeof *index);
    if (!index) return -ENOMEM;
    for (size_t n = 1; n < tree->n; n++) { /* the root is not indexed */
        const sonde_tree_node_t *node = &tree->nodes[n];
        size_t j = stackfmt_hash(node->parent, node->key) & (cap - 1);
        while (index[j])
            j = (j + 1) & (cap - 1);
        index[j] = (uint32_t)n;
    }
    free(tree->index);
    tree->index = index;
    tree->index_cap = cap;
    return 0;
}

/* The child of parent with key, created if needed; 0 on failure. */
static uint32_t stackfmt_child(sonde_tree_t *tree, uint32_t parent, uint32_t key)
{
    if ((tree->n + 1) * 2 > tree->index_cap && stackfmt_index_grow(tree) < 0) return 0;
    size_t j = stackfmt_hash(parent, key) & (tree->index_cap - 1);
    for (; tree->index[j]; j = (j + 1) & (tree->index_cap - 1)) {
        const sonde_tree_node_t *node = &tree->nodes[tree->index[j]];
        if (node->parent == parent && node->key == key) return tree->index[j];
    }
    if (tree->n == tree->cap) {
        size_t cap = tree->cap * 2;
        sonde_tree_node_t *grown = realloc(tree->nodes, cap * sizeof *grown);
        if (!grown) return 0;
        tree->nodes = grown;
        tree->cap = cap;
    }
    uint32_t at = (uint32_t)tree->n++;
    sonde_tree_node_t *node = &tree->nodes[at];
    memset(node, 0, sizeof *node);
    node->key = key;
    node->parent = parent;
    node->depth = tree->nodes[parent].depth + 1;
    node->next_sibling = tree->nodes[parent].first_child;
    tree->nodes[parent].first_child = at;
    if (node->depth > tree->max_depth) tree->max_depth = node->depth;
    tree->index[j] = at;
    return at;
}

void sonde__tree_label(const sonde_profile_t *prof, const sonde_tree_node_t *node, sonde_buf_t *out)
{
    if (node->depth == 0)
        sonde_buf_puts(out, "all");
    else if (node->key & SONDE_TREE_THREAD)
        sonde_buf_puts(out, sonde__thread_name(prof, (int)(node->key & ~SONDE_TREE_THREAD)));
    else if (node->key < prof->n_frames)
        sonde__frame_label(out, &prof->frames[node->key]);
}

/* Orders each node's children by label (so the picture does not depend on
 * the order stacks were sampled in). */
struct stackfmt_sort_item {
    char *label;
    uint32_t node;
};

static int stackfmt_by_label(const void *a, const void *b)
{
    const struct stackfmt_sort_item *x = a, *y = b;
    int c = strcmp(x->label, y->label);
    return c ? c : (x->node < y->node ? -1 : x->node > y->node);
}

static int stackfmt_sort_children(const sonde_profile_t *prof, sonde_tree_t *tree)
{
    struct stackfmt_sort_item *items = NULL;
    size_t cap = 0;
    int rc = 0;
    for (size_t p = 0; p < tree->n && rc == 0; p++) {
        size_t count = 0;
        for (uint32_t c = tree->nodes[p].first_child; c; c = tree->nodes[c].next_sibling)
            count++;
        if (count < 2) continue;
        if (count > cap) {
            struct stackfmt_sort_item *grown = realloc(items, count * sizeof *grown);
            if (!grown) {
                rc = -ENOMEM;
                break;
            }
            items = grown;
            cap = count;
        }
        size_t k = 0;
        for (uint32_t c = tree->nodes[p].first_child; c; c = tree->nodes[c].next_sibling, k++) {
            sonde_buf_t label = SONDE_BUF_INIT;
            sonde__tree_label(prof, &tree->nodes[c], &label);
            items[k].label = label.data ? label.data : strdup("");
            items[k].node = c;
            if (!items[k].label || sonde_buf_error(&label)) rc = -ENOMEM;
        }
        if (rc == 0) {
            qsort(items, count, sizeof *items, stackfmt_by_label);
            tree->nodes[p].first_child = items[0].node;
            for (size_t i = 0; i < count; i++)
                tree->nodes[items[i].node].next_sibling = i + 1 < count ? items[i + 1].node : 0;
        }
        for (size_t i = 0; i < count; i++)
            free(items[i].label);
    }
    free(items);
    return rc;
}

/* Places every node: children start where their parent starts, one after
 * the other. Nodes are created after their parents, so one pass in index
 * order sees each parent placed before its children. */
static void stackfmt_layout(sonde_tree_t *tree)
{
    tree->nodes[0].start = 0;
    for (size_t p = 0; p < tree->n; p++) {
        uint64_t at = tree->nodes[p].start;
        for (uint32_t c = tree->nodes[p].first_child; c; c = tree->nodes[c].next_sibling) {
            tree->nodes[c].start = at;
            at += tree->nodes[c].samples;
        }
    }
}

int sonde__tree_build(const sonde_profile_t *prof, sonde_tree_t *tree)
{
    memset(tree, 0, sizeof *tree);
    tree->cap = 256;
    tree->nodes = calloc(tree->cap, sizeof *tree->nodes);
    if (!tree->nodes) return -ENOMEM;
    tree->n = 1; /* the root */
    for (size_t s = 0; s < prof->n_stacks; s++) {
        const sonde_stack_t *stack = &prof->stacks[s];
        if (!stack->samples) continue;
        uint32_t node = SONDE_TREE_ROOT;
        tree->nodes[0].samples += stack->samples;
        if (stack->thread >= 0) {
            node = stackfmt_child(tree, node, SONDE_TREE_THREAD | (uint32_t)stack->thread);
            if (!node) goto nomem;
            tree->nodes[node].samples += stack->samples;
        }
        for (uint32_t d = 0; d < stack->depth; d++) {
            if (stack->frames[d] >= prof->n_frames) continue; /* not a frame of this profile */
            node = stackfmt_child(tree, node, stack->frames[d] & ~SONDE_TREE_THREAD);
            if (!node) goto nomem;
            tree->nodes[node].samples += stack->samples;
        }
    }
    if (stackfmt_sort_children(prof, tree) < 0) goto nomem;
    stackfmt_layout(tree);
    return 0;
nomem:
    sonde__tree_free(tree);
    return -ENOMEM;
}

void sonde__tree_free(sonde_tree_t *tree)
{
    free(tree->nodes);
    free(tree->index);
    memset(tree, 0, sizeof *tree);
}

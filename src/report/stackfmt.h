/* stackfmt.h — helpers shared by the call-stack writers of src/report/.
 *
 * Owns: what the folded, flame-graph (SVG) and speedscope writers have in
 * common: a frame's label "func (file:line)", a thread's name, UTF-8
 * decoding of untrusted names, and the merged call tree a flame graph is
 * drawn from. Included by folded.c, flamegraph.c and speedscope.c only.
 * Plain C, no libpython, never in a signal handler.
 */
#ifndef SONDE_STACKFMT_H
#define SONDE_STACKFMT_H

#include "report.h"

/* Appends "func (file:line)" ("func (file)" when the line is unknown,
 * "func" alone without a file: the depth limit's marker frame),
 * unescaped, to out. */
void sonde__frame_label(sonde_buf_t *out, const sonde_stack_frame_t *frame);

/* The name of thread index `thread` of prof ("" when out of range). */
const char *sonde__thread_name(const sonde_profile_t *prof, int thread);

/* Length of the valid UTF-8 sequence at s (at most avail bytes), with its
 * code point in *cp; 0 when the bytes are not valid UTF-8 (overlong forms,
 * surrogates and code points above U+10FFFF are invalid). */
size_t sonde__utf8_decode(const unsigned char *s, size_t avail, uint32_t *cp);

/* ---- the merged call tree (flame graphs) ----------------------------------- */

#define SONDE_TREE_ROOT 0u
#define SONDE_TREE_THREAD 0x80000000u /* key bit: a thread node, not a frame */

typedef struct sonde_tree_node {
    uint32_t key;                       /* frame index, or SONDE_TREE_THREAD | thread; root: 0 */
    uint32_t parent;                    /* node index; the root is its own parent */
    uint32_t depth;                     /* 0 for the root */
    uint32_t first_child, next_sibling; /* node indices, 0 = none */
    uint64_t samples;                   /* samples of the node and everything above it */
    uint64_t start;                     /* samples left of it at its depth (after layout) */
} sonde_tree_node_t;

typedef struct sonde_tree {
    sonde_tree_node_t *nodes; /* owned; nodes[0] is the root ("all") */
    size_t n, cap;
    uint32_t *index; /* owned; open addressing on (parent, key) */
    size_t index_cap;
    uint32_t max_depth;
} sonde_tree_t;

/* Merges every stack of prof (a thread node first when stack->thread >= 0)
 * and lays the tree out: children ordered by label, each node's start.
 * Returns 0 or -ENOMEM (the tree is then freed). */
int sonde__tree_build(const sonde_profile_t *prof, sonde_tree_t *tree);
void sonde__tree_free(sonde_tree_t *tree);
/* Label of a node (frame label, thread name, or "all"), unescaped. */
void sonde__tree_label(const sonde_profile_t *prof, const sonde_tree_node_t *node,
                       sonde_buf_t *out);

#endif

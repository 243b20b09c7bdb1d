/* stacks.c - the rewriting machine's state and stacks (see stacks.h):
 * making the machine, raising the value stack's bound and clearing what
 * a run left on it, growing the mapped frame stack, and dropping the
 * machine after a failed run. */
#include "stacks.h"

#include <gc/gc.h>
#include <string.h>
#include <sys/mman.h>

tgW_machine *tgW_machine_get(tg_rules *rs)
{
    if (!rs->m)
        rs->m = GC_MALLOC(sizeof *rs->m);
    return rs->m;
}

/* A run uses the value stack below vlim, which vs_reserve (stacks.h)
 * raises here (doubling, growing the stack when it must) whenever a
 * frame needs more: so vlim is a high-water mark for the price of the
 * bound check every push makes anyway, and tgW_vs_scrub clears just
 * what a run wrote.  The whole stack is kept when it grows (values above the top
 * may be read back by the frames below, so a copy takes all of them). */
int tgW_vs_raise(tgW_machine *M, size_t need)
{
    if (need > M->vcap) {
        tg_term **v = tgW_grow(M->vs, M->vcap, &M->vcap, need, sizeof *v);
        if (!v)
            return -1;
        M->vs = v;
    }
    size_t lim = 2 * M->vlim > need ? 2 * M->vlim : need;
    M->vlim = lim < M->vcap ? lim : M->vcap;
    return 0;
}

/* At the end of a run: the values it left above the top are cleared.  A
 * word left there is scanned, and keeps its term, and all that term
 * holds, alive until a later run as deep writes over it (the 20 000
 * cells of (build 20000) after (len (build 20000)) was normalized). */
void tgW_vs_scrub(tgW_machine *M)
{
    if (M->vs)
        memset(M->vs, 0, M->vlim * sizeof *M->vs);
    M->vlim = 0;
}

/* The frame stack: an inline check (fs_reserve), the growing out of line,
 * for a frame is pushed per call.
 * The frames hold no pointer the collector must follow (a frame's head
 * is the name of an op with rules, its rules and program are the rule
 * set's), so they live in memory it neither clears nor scans: a deep
 * recursion (factorial's plus) has hundreds of thousands of frames, and
 * clearing and scanning them cost a tenth of the run.  Nor do they take
 * a piece of its heap: under a heap limit, after a runaway had filled
 * the heap and its data was collected, the free memory lay in many heap
 * sections, and a stack of a few megabytes that fitted at first found
 * no room in one piece.  Under a limit they may take half of it, as they
 * could in the heap.  Mapped, not malloc'd: the machine is collector
 * memory, which leak checkers do not read, so a malloc'd stack of a rule
 * set in use at exit would read as a leak. */
static frame *fs_map(size_t cap)
{
    void *p = mmap(NULL, cap * sizeof(frame), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void fs_unmap(tgW_machine *M)
{
    if (M->fs)
        munmap(M->fs, M->fcap * sizeof(frame));
    M->fs = NULL;
    M->fcap = 0;
}

int tgW_fs_grow(tgW_machine *M, size_t need)
{
    size_t cap = M->fcap ? 2 * M->fcap : 4096 / sizeof(frame);
    while (cap < need)
        cap *= 2;
    size_t most = tgT_max_heap() / 2 / sizeof(frame);
    if (most && cap > most)
        cap = most > need ? most : need;
    if (most && cap > most)
        return -1;
    frame *f = fs_map(cap);
    if (!f)
        return -1;
    if (M->fcap)
        memcpy(f, M->fs, M->fcap * sizeof *f);
    fs_unmap(M);
    M->fs = f, M->fcap = cap;
    return 0;
}

/* After a failed run (out of memory above all), the machine's stacks go:
 * the values left in them above the top are scanned by the collector, and
 * one of them can hold the whole runaway term that ran the heap out, so
 * that nothing after could allocate.  Its done map is malloc memory
 * registered as a root: freed here.  The value stack is cleared before
 * it is freed: dead frames of the failed run (reduce's, the loops') keep
 * pointers to it, and a conservative collector that finds one of them in
 * a frame of a later call would keep the dropped stack, with every term
 * left in it, alive (after a REPL `rewrite` ran out of memory, two slots
 * of it held the runaway's term through the next entry). */
void tgW_machine_drop(tg_rules *rs)
{
    tgW_machine *M = rs->m;
    if (!M)
        return;
    tgW_map_clear(&M->done);
    fs_unmap(M);
    if (M->vs) {
        memset(M->vs, 0, M->vcap * sizeof *M->vs);
        GC_FREE(M->vs);
    }
    M->vs = NULL, M->vcap = M->vlim = 0;
    M->input = M->stepped = NULL;
    rs->m = NULL;
}

void tgW_machine_free(tg_rules *rs)
{
    tgW_machine_drop(rs);
}

tg_term **tgW_machine_values(const tg_rules *rs)
{
    return rs->m ? rs->m->vs : NULL;
}

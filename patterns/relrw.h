/* relrw.h - relations of two arguments used as rewrites (module prefix
 * tgD_): a relation r rewrites a term t to the first answer of
 * (r t ?out), and (reverse r) to the first answer of (r ?out t).  Each
 * direction is a rule object without programs (rset.h: rule->rel), so
 * that plans, tags, queries and profiles treat it as they treat rules. */
#ifndef TG_RELRW_H
#define TG_RELRW_H

#include "rset.h"

/* How relation name stands in the rule set's logic environment: 0 when
 * it is a relation of two arguments; otherwise -1 when there is no such
 * relation, or its arity. */
long tgD_check(tg_rules *rs, const tg_term *name);
/* The arity of relation name, -1 when there is none. */
long tgD_arity(tg_rules *rs, const tg_term *name);
/* The rule object of relation name used in one direction (made once per
 * rule set and kept); NULL with err filled when name is not a relation
 * of two arguments (any more). */
tgW_rule *tgD_rule(tg_rules *rs, tg_term *name, int backward, tg_error *err);
/* One rewrite of compound term t by the first of the n relation rules
 * rels that has an answer other than t: 1 with *out, 0 when none has, -1
 * with err filled (an error in the search, an answer that is not ground,
 * a rule over the max-use limit when limit is not NULL). */
int tgD_step(tg_rules *rs, tgW_rule *const *rels, uint32_t n, tg_term *t, tgW_limit *limit,
             tg_term **out, tg_error *err);
/* The normal form of t under the relations rels, innermost: the elements
 * of each compound node first, then the relations at the node, again on
 * what they give, until none has an answer; each term's normal form is
 * computed once and kept in memo (empty at first, then kept between
 * calls with the same relations: they are functions of the term; after
 * an error it holds marks and must be dropped).  A term met again while
 * it is being normalized is a cycle (an error naming the relations that
 * fired since). */
tg_term *tgD_normalize(tg_rules *rs, tgW_rule *const *rels, uint32_t n, tg_term *t,
                       tgW_limit *limit, tgW_map *memo, tg_error *err);
/* A relation called as a rule's condition (compile.c: E_GOAL): desc is
 * (REL MASK LINE COL GOAL VAR REG ...), args its nargs arguments (templates
 * where MASK says so), R the rule's registers.  1 when the relation has
 * an answer (the goal's variables then in their registers), 0 when not,
 * -1 with err filled (named at the condition's place). */
int tgD_goal(tg_rules *rs, tg_term *desc, tg_term *const *args, unsigned nargs, tg_term **R,
             const tgW_rule *r, tg_error *err);

#endif

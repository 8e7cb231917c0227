#pragma once
// Binomial checkpointing (Griewank 1992, "revolve"): the order in which an
// adjoint run with room for only `slots` saved forward states recomputes the
// forward steps it needs, so that memory is O(slots) states instead of nt
// levels and every level is recomputed exactly.
//
// The engine holds one current forward state (at step `cur`) and `slots`
// saved ones; the start state (step 0, all zero) needs no slot. Actions:
//   advance(to)   run forward steps cur .. to-1 (no levels kept); cur = to
//   store(slot)   save the current state in `slot`
//   restore(slot) make the state in `slot` current (slot -1: the zero start)
//   reverse(m)    with cur == m: keep Ey^m, run step m keeping Ey^{m+1}, then
//                 the adjoint step m (the current state is spent)
// reverse(m) comes for m = nt-1 down to 0, once each.

#include <vector>

namespace gprfwi {

struct CheckpointAction {
    enum Kind { advance, store, restore, reverse } kind;
    int step = 0;  // advance: target step; reverse: m
    int slot = 0;  // store, restore
};

/// The schedule with the fewest forward steps for the uniform cost model
/// (each forward step costs 1, saving and restoring nothing), found by
/// dynamic programming over the first split with a local search; nt >= 1,
/// slots >= 0.
std::vector<CheckpointAction> binomial_schedule(int nt, int slots);

/// Forward steps the schedule runs (advance steps plus one per reverse).
long long schedule_forward_steps(const std::vector<CheckpointAction>& schedule);

/// Slots for `option` (0 off; -1 automatic: ceil(log2 nt), enough for about
/// log2(nt)/2 extra forward runs).
int resolve_binomial_slots(int option, int nt);

}  // namespace gprfwi

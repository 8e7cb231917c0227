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

#include <functional>
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

/// What an engine does for the reverse-time loop (run_reverse_time). Levels
/// that are recomputed live in a window of slots: the segment's levels a..b
/// at slots 0..b-a, or the binomial schedule's Ey^m and Ey^{m+1} at 0 and 1.
struct ReverseTimeSteps {
    std::function<void()> start_from_zero;                  // current state: step 0, all zero
    std::function<void(int m)> advance;                     // forward step m, keeping nothing
    std::function<void(int slot)> save, load;               // binomial states
    std::function<void(int seg, int a)> load_segment;       // the forward's state at a = seg c; Ey^a into slot 0 if a > 0
    std::function<void(int m, int slot)> keep;              // the current Ey^m into `slot`
    std::function<void(int m, int slot)> step_keeping;      // forward step m, Ey^{m+1} into `slot`
    // adjoint step m with the levels in slots prev (-1 where m = 0: the zero
    // start) and next; `last`: the last step that reads these slots
    std::function<void(int m, int prev, int next, bool last)> adjoint;
    std::function<void(int m)> adjoint_kept;                // adjoint step m with the forward's kept levels m, m+1
};

/// The reverse-time loop both engines run: the adjoint steps m = nt-1 down
/// to 0, each after the forward levels it images with are at hand. With
/// `binomial` (a schedule for nt steps), every level is recomputed from the
/// zero start and the schedule's saved states; with checkpoint_steps c > 0,
/// segment by segment in reverse from the forward's state every c steps;
/// otherwise from the levels the forward kept. Only the callbacks a mode
/// uses need be set.
void run_reverse_time(int nt, int checkpoint_steps, const std::vector<CheckpointAction>* binomial,
                      const ReverseTimeSteps& steps);

}  // namespace gprfwi

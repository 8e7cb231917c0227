#include "gprfwi/checkpoint_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "gprfwi/error.hpp"

namespace gprfwi {

namespace {

/// Minimal forward steps to reverse l steps from a saved start with s free
/// slots: F(1, s) = 1, F(l, 0) = l (l + 1) / 2, and otherwise the best first
/// split m: advance m, store, reverse the last l - m with s - 1 slots,
/// restore, reverse the first m with s slots.
class Planner {
public:
    long long cost(int l, int s) {
        if (l <= 1) return l;
        if (s == 0) return static_cast<long long>(l) * (l + 1) / 2;
        if (s >= l - 1) return 2LL * l - 1;  // a slot per step: one sweep forward, one step per reverse
        const auto key = std::make_pair(l, s);
        if (const auto it = memo_.find(key); it != memo_.end()) return it->second.first;
        // the cost of a split is close to unimodal in m: search around the
        // bisection with shrinking strides, then settle on the local best
        const auto at = [&](int m) { return static_cast<long long>(m) + cost(l - m, s - 1) + cost(m, s); };
        int best = std::clamp(l / 2, 1, l - 1);
        long long best_cost = at(best);
        for (int stride = std::max(1, l / 4); stride >= 1; stride /= 2) {
            for (bool moved = true; moved;) {
                moved = false;
                for (const int m : {best - stride, best + stride}) {
                    if (m < 1 || m > l - 1) continue;
                    const long long c = at(m);
                    if (c < best_cost) {
                        best_cost = c;
                        best = m;
                        moved = true;
                    }
                }
            }
        }
        memo_[key] = {best_cost, best};
        return best_cost;
    }
    int split(int l, int s) {
        if (s >= l - 1) return 1;  // store every step on the way
        cost(l, s);
        return memo_.at({l, s}).second;
    }

private:
    std::map<std::pair<int, int>, std::pair<long long, int>> memo_;
};

/// Reverses steps [a, b) with the state at a current and restorable from
/// `start_slot`, and the slots [free_slot, free_slot + s) free.
void plan(Planner& p, int a, int b, int start_slot, int free_slot, int s, std::vector<CheckpointAction>& out) {
    using A = CheckpointAction;
    const int l = b - a;
    if (l == 1) {
        out.push_back({A::reverse, a, 0});
        return;
    }
    if (s == 0) {
        for (int m = b - 1; m >= a; --m) {
            if (m < b - 1) out.push_back({A::restore, a, start_slot});
            if (m > a) out.push_back({A::advance, m, 0});
            out.push_back({A::reverse, m, 0});
        }
        return;
    }
    const int m = a + p.split(l, s);
    out.push_back({A::advance, m, 0});
    out.push_back({A::store, m, free_slot});
    plan(p, m, b, free_slot, free_slot + 1, s - 1, out);
    out.push_back({A::restore, a, start_slot});
    plan(p, a, m, start_slot, free_slot, s, out);
}

}  // namespace

std::vector<CheckpointAction> binomial_schedule(int nt, int slots) {
    if (nt < 1 || slots < 0)
        throw InvalidArgument(fmt::format("binomial_schedule: nt = {} must be >= 1 and slots = {} >= 0", nt, slots));
    Planner p;
    std::vector<CheckpointAction> out;
    plan(p, 0, nt, -1, 0, std::min(slots, nt), out);
    return out;
}

long long schedule_forward_steps(const std::vector<CheckpointAction>& schedule) {
    long long steps = 0;
    int cur = 0;
    std::map<int, int> slot_step;
    for (const CheckpointAction& a : schedule) {
        switch (a.kind) {
        case CheckpointAction::advance: steps += a.step - cur; cur = a.step; break;
        case CheckpointAction::store: slot_step[a.slot] = cur; break;
        case CheckpointAction::restore: cur = a.slot < 0 ? 0 : slot_step.at(a.slot); break;
        case CheckpointAction::reverse: steps += 1; cur = a.step + 1; break;
        }
    }
    return steps;
}

int resolve_binomial_slots(int option, int nt) {
    if (option == 0) return 0;
    if (option > 0) return option;
    return std::max(1, static_cast<int>(std::ceil(std::log2(std::max(nt, 2)))));
}

void run_reverse_time(int nt, int checkpoint_steps, const std::vector<CheckpointAction>* binomial,
                      const ReverseTimeSteps& steps) {
    if (binomial) {
        steps.start_from_zero();
        int cur = 0;
        for (const CheckpointAction& a : *binomial) {
            switch (a.kind) {
            case CheckpointAction::advance:
                for (; cur < a.step; ++cur) steps.advance(cur);
                break;
            case CheckpointAction::store: steps.save(a.slot); break;
            case CheckpointAction::restore:
                if (a.slot < 0) steps.start_from_zero();
                else steps.load(a.slot);
                cur = a.step;
                break;
            case CheckpointAction::reverse: {
                const int m = a.step;
                if (m > 0) steps.keep(m, 0);
                steps.step_keeping(m, 1);
                steps.adjoint(m, m > 0 ? 0 : -1, 1, true);
                cur = m + 1;  // (the current state is spent)
                break;
            }
            }
        }
    } else if (const int c = checkpoint_steps) {
        // segments in reverse: the state at a, levels a+1..b recomputed, the adjoint b-1..a
        for (int seg = (nt - 1) / c; seg >= 0; --seg) {
            const int a = seg * c, b = std::min(nt, a + c);
            steps.load_segment(seg, a);
            for (int m = a; m < b; ++m) steps.step_keeping(m, m + 1 - a);
            for (int m = b - 1; m >= a; --m) steps.adjoint(m, m > 0 ? m - a : -1, m + 1 - a, m == a);
        }
    } else {
        for (int m = nt - 1; m >= 0; --m) steps.adjoint_kept(m);
    }
}

}  // namespace gprfwi

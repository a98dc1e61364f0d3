#pragma once
/// Delivering a time-ordered list at the instants its items fall due (the trace feeder's jobs,
/// the fault actor's plan). One timer at a time, for the next item's time, so pending timers
/// stay few however long the list is; each tick takes every item due by then, in order, so
/// items of one instant go together.
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "actors/atoms.hpp"
#include "actors/timebase.hpp"

namespace aryl {

/// Arms `self`'s tick(next) for when items[next] falls due (`due`: its time, a member
/// pointer or a callable), or quits once every item is delivered.
template <class Self, class T, class Due>
void arm_next_due(Self self, const std::vector<T>& items, size_t next, const timebase& tb, Due due) {
  if (next < items.size())
    self->delayed_send(self, tb.span(std::invoke(due, items[next]) - tb.now(self)), tick_atom::value,
                       static_cast<uint64_t>(next));
  else
    self->quit();
}

/// The items from `next` on that are due at `now`, moved out in order; `next` moves past them.
template <class T, class Due>
std::vector<T> take_due(std::vector<T>& items, size_t& next, sim_time now, Due due) {
  size_t end = next;
  while (end < items.size() && std::invoke(due, items[end]) <= now) ++end;
  std::vector<T> out;
  out.reserve(end - next);  // sized once: a trace's job specs are large to move again
  for (; next < end; ++next) out.push_back(std::move(items[next]));
  return out;
}

} // namespace aryl

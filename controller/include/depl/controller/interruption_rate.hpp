// The interruption rate of a pool as a job observes it (docs/depl-model.md section 7): the
// pool's stated rate (its nodes' depl.dev/interruptions-per-hour, or the capacity type's
// default) updated by the preemptions the job had there over the time its workers trained
// there, and the bookkeeping of that time in the job's status.
#pragma once

#include <chrono>
#include <string>

#include "depl/controller/job_status.hpp"

namespace depl::controller {

// The posterior mean rate per worker-hour of a Gamma prior with mean `stated` and shape
// `prior_events` (rate `prior_events / stated` worker-hours) after `preemptions` in
// `worker_hours`: (prior_events + preemptions) / (prior_events / stated + worker_hours). The
// stated rate weighs as much as `prior_events` interruptions observed, so one early preemption
// moves it by a bounded factor. `stated` itself when it is not positive (an eviction does not
// make an on-demand pool spot) or `prior_events` is not positive (the observed rate turned off).
double posterior_interruption_rate(double stated, int preemptions, double worker_hours,
                                   double prior_events);

// The rate a plan is made with: the posterior where it is above the stated rate, the stated rate
// otherwise (a pool that interrupted less than stated keeps its stated rate: one job's luck is
// not the pool's history, which belongs in its annotation).
double planning_interruption_rate(double stated, const PreemptionRecord& observed,
                                  double prior_events);

// Seconds from the RFC 3339 time `since` to `until`, at least 0; 0 when `since` is unreadable.
double seconds_since(const std::string& since, std::chrono::system_clock::time_point until);

// Adds `worker_seconds` of training on `pool` to its record in status.preemptions, when the pool
// has interruptions (status.poolFigures) or a record already: the exposure its observed rate is
// measured over.
void add_training_time(JobStatus& status, const std::string& pool, double worker_seconds);

}  // namespace depl::controller

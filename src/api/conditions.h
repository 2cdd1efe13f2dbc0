// File: api/conditions.h
//
// Helpers for `status.conditions` lists shaped like metav1.Condition, with
// the semantics of k8s.io/apimachinery meta.SetStatusCondition: one entry per
// type, lastTransitionTime changes only when the status changes.
//
// Thread safety: functions over caller-owned values.

#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/common.h"

namespace caphv::api {

inline constexpr std::string_view kConditionTrue = "True";
inline constexpr std::string_view kConditionFalse = "False";
inline constexpr std::string_view kConditionUnknown = "Unknown";

// Condition types.
inline constexpr std::string_view kReadyCondition = "Ready";
inline constexpr std::string_view kPausedCondition = "Paused";

// RFC 3339 UTC with second precision, e.g. "2026-03-10T12:00:00Z".
std::string FormatTime(std::chrono::system_clock::time_point t);
std::string NowRfc3339();
// The inverse of FormatTime (fractional seconds and zone ignored: UTC);
// nullopt when `text` is not such a time.
std::optional<std::chrono::system_clock::time_point> ParseTime(const std::string& text);

// The condition of `type`, or nullptr.
const Condition* FindCondition(const std::vector<Condition>& conditions, std::string_view type);
Condition* FindCondition(std::vector<Condition>& conditions, std::string_view type);

bool IsConditionTrue(const std::vector<Condition>& conditions, std::string_view type);

// Sets `c` (by type). When the status is unchanged the existing
// lastTransitionTime is kept; otherwise it becomes `c.last_transition_time`,
// or `now` when that is empty. Returns true if anything changed.
bool SetCondition(std::vector<Condition>& conditions, Condition c, std::string_view now);

// Removes the condition of `type`; returns true if one was removed.
bool RemoveCondition(std::vector<Condition>& conditions, std::string_view type);

// True when `reason` is a valid metav1.Condition reason (non-empty, PascalCase-like).
bool IsValidConditionReason(std::string_view reason);

}  // namespace caphv::api

# The scheduler's pure core (ledger, queue policies, round planner); included from the top
# level. Like the solvers: no CAF, Asio, msgpack or clock types.
add_library(aryl_policy STATIC
  ${CMAKE_CURRENT_LIST_DIR}/policy.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cluster_ledger.cpp
  ${CMAKE_CURRENT_LIST_DIR}/round_planner.cpp
  ${CMAKE_CURRENT_LIST_DIR}/elastic_round.cpp
  ${CMAKE_CURRENT_LIST_DIR}/base_placement.cpp
  ${CMAKE_CURRENT_LIST_DIR}/consolidation.cpp
  ${CMAKE_CURRENT_LIST_DIR}/reservation.cpp
  ${CMAKE_CURRENT_LIST_DIR}/queue_preemption.cpp
  ${CMAKE_CURRENT_LIST_DIR}/running_plans.cpp
  ${CMAKE_CURRENT_LIST_DIR}/duration_estimate.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tenants.cpp
  ${CMAKE_CURRENT_LIST_DIR}/quota_reclaim.cpp
  ${CMAKE_CURRENT_LIST_DIR}/quota_growth.cpp
  ${CMAKE_CURRENT_LIST_DIR}/heartbeats.cpp
  ${CMAKE_CURRENT_LIST_DIR}/priorities.cpp
  ${CMAKE_CURRENT_LIST_DIR}/job_queue_rules.cpp
)
target_link_libraries(aryl_policy PUBLIC aryl_solvers)
target_include_directories(aryl_policy PUBLIC ${PROJECT_SOURCE_DIR})

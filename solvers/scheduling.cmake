# The scheduler's pure core (ledger, queue policies, round planner); included from the top
# level. Like the solvers: no CAF, Asio, msgpack or clock types.
add_library(aryl_policy STATIC
  ${CMAKE_CURRENT_LIST_DIR}/policy.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cluster_ledger.cpp
  ${CMAKE_CURRENT_LIST_DIR}/round_planner.cpp
  ${CMAKE_CURRENT_LIST_DIR}/round/elastic_round.cpp
  ${CMAKE_CURRENT_LIST_DIR}/round/local_round.cpp
  ${CMAKE_CURRENT_LIST_DIR}/round/queue_walk.cpp
  ${CMAKE_CURRENT_LIST_DIR}/round/base_placement.cpp
  ${CMAKE_CURRENT_LIST_DIR}/round/queue_preemption.cpp
  ${CMAKE_CURRENT_LIST_DIR}/round/quota_reclaim.cpp
  ${CMAKE_CURRENT_LIST_DIR}/round/reservation.cpp
  ${CMAKE_CURRENT_LIST_DIR}/round/running_plans.cpp
  ${CMAKE_CURRENT_LIST_DIR}/round/quota_growth.cpp
  ${CMAKE_CURRENT_LIST_DIR}/round/moves.cpp
  ${CMAKE_CURRENT_LIST_DIR}/round/consolidation.cpp
  ${CMAKE_CURRENT_LIST_DIR}/round/sizing.cpp
  ${CMAKE_CURRENT_LIST_DIR}/round/extra_workers.cpp
  ${CMAKE_CURRENT_LIST_DIR}/round/apply.cpp
  ${CMAKE_CURRENT_LIST_DIR}/duration_estimate.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tenants.cpp
  ${CMAKE_CURRENT_LIST_DIR}/heartbeats.cpp
  ${CMAKE_CURRENT_LIST_DIR}/priorities.cpp
  ${CMAKE_CURRENT_LIST_DIR}/job_queue_rules.cpp
)
target_link_libraries(aryl_policy PUBLIC aryl_solvers)
target_include_directories(aryl_policy PUBLIC ${PROJECT_SOURCE_DIR})

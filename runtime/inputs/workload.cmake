# Workload inputs (traces, synthetic jobs, job attributes, inference demand); included from
# runtime/CMakeLists.txt. Plain C++: no CAF, Asio or msgpack.
add_library(aryl_workload STATIC
  ${CMAKE_CURRENT_LIST_DIR}/trace_reader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/synthetic_workload.cpp
  ${CMAKE_CURRENT_LIST_DIR}/job_attributes.cpp
  ${CMAKE_CURRENT_LIST_DIR}/inference_demand.cpp
  ${CMAKE_CURRENT_LIST_DIR}/job_checks.cpp
  ${CMAKE_CURRENT_LIST_DIR}/duration_text.cpp
  ${CMAKE_CURRENT_LIST_DIR}/torchrun_command.cpp
)
target_include_directories(aryl_workload PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(aryl_workload PRIVATE fmt::fmt)

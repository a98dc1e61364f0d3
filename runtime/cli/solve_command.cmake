# `aryl solve` back end: JSON in, one solver, JSON out. Kept out of solvers/ so the solvers
# stay free of I/O and JSON. Included from runtime/CMakeLists.txt.
add_library(aryl_solve_command STATIC ${CMAKE_CURRENT_LIST_DIR}/solve_command.cpp)
target_include_directories(aryl_solve_command PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(aryl_solve_command PUBLIC aryl_solvers PRIVATE nlohmann_json::nlohmann_json fmt::fmt)

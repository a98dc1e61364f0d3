# `aryl history` (its filters and columns, the CLI command; the table's reader is the journal's,
# aryl_state_journal, as serve answers history from its own connection) and
# `aryl simulate --db` (a simulation's jobs into a history table). The table's writer is the
# journal's (aryl_state_journal). Included from serve.cmake.
add_library(aryl_history STATIC ${CMAKE_CURRENT_LIST_DIR}/history_view.cpp ${CMAKE_CURRENT_LIST_DIR}/sim_history.cpp
            ${PROJECT_SOURCE_DIR}/runtime/cli/history_command.cpp)
target_include_directories(aryl_history PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(aryl_history PUBLIC aryl_serve aryl_state_journal CLI11::CLI11
                      PRIVATE SQLite::SQLite3 fmt::fmt nlohmann_json::nlohmann_json)

# The journal of `aryl serve --state` (SQLite, Debian's libsqlite3-dev). No CAF.
find_package(SQLite3 REQUIRED)
add_library(aryl_state_journal STATIC ${CMAKE_CURRENT_LIST_DIR}/state_journal.cpp)
target_include_directories(aryl_state_journal PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(aryl_state_journal PUBLIC aryl_io PRIVATE SQLite::SQLite3 fmt::fmt nlohmann_json::nlohmann_json)

# `aryl serve`: the scheduler's actors on the wall clock behind a network front (gateway);
# the client commands (`aryl status`, `demand`, `submit`, `cancel`).
# Included from the top level, after runtime/ and runtime/live/.
add_library(aryl_serve STATIC ${CMAKE_CURRENT_LIST_DIR}/gateway.cpp ${CMAKE_CURRENT_LIST_DIR}/gateway_listener.cpp
            ${CMAKE_CURRENT_LIST_DIR}/gateway_session.cpp ${CMAKE_CURRENT_LIST_DIR}/serve.cpp
            ${CMAKE_CURRENT_LIST_DIR}/client.cpp ${CMAKE_CURRENT_LIST_DIR}/job_file.cpp
            ${CMAKE_CURRENT_LIST_DIR}/metrics.cpp ${CMAKE_CURRENT_LIST_DIR}/serve_state.cpp
            ${CMAKE_CURRENT_LIST_DIR}/state_checks.cpp)
target_include_directories(aryl_serve PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(aryl_serve PUBLIC aryl_driver aryl_wire aryl_live_agent aryl_state_journal
                      PRIVATE Boost::boost fmt::fmt nlohmann_json::nlohmann_json yaml-cpp)
target_compile_definitions(aryl_serve PRIVATE BOOST_ASIO_NO_DEPRECATED)

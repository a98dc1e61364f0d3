# The journal of `aryl serve --state` (SQLite, Debian's libsqlite3-dev), and the checks a
# restored journal passes. No CAF.
find_package(SQLite3 REQUIRED)
add_library(aryl_state_journal STATIC ${CMAKE_CURRENT_LIST_DIR}/state_journal.cpp
            ${CMAKE_CURRENT_LIST_DIR}/state_journal_load.cpp ${CMAKE_CURRENT_LIST_DIR}/state_journal_writes.cpp
            ${CMAKE_CURRENT_LIST_DIR}/state_journal_json.cpp
            ${CMAKE_CURRENT_LIST_DIR}/state_checks.cpp
            ${CMAKE_CURRENT_LIST_DIR}/history_table.cpp ${CMAKE_CURRENT_LIST_DIR}/state_journal_history.cpp
            ${CMAKE_CURRENT_LIST_DIR}/history_reader.cpp)
target_include_directories(aryl_state_journal PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(aryl_state_journal PUBLIC aryl_io PRIVATE SQLite::SQLite3 fmt::fmt nlohmann_json::nlohmann_json)

# The scheduler's network front (gateway): Asio and the wire codec; it reaches the run only
# through a worker_router, so it builds without CAF (the connection fuzz target links it alone).
# Its clients' replies come from the job book (`show`, `status --all`); `aryl logs` goes
# through the log relay.
add_library(aryl_gateway STATIC ${CMAKE_CURRENT_LIST_DIR}/gateway.cpp ${CMAKE_CURRENT_LIST_DIR}/gateway_waits.cpp
            ${CMAKE_CURRENT_LIST_DIR}/gateway_listener.cpp ${CMAKE_CURRENT_LIST_DIR}/gateway_session.cpp
            ${CMAKE_CURRENT_LIST_DIR}/gateway_requests.cpp
            ${CMAKE_CURRENT_LIST_DIR}/gateway_status.cpp ${CMAKE_CURRENT_LIST_DIR}/gateway_orders.cpp ${CMAKE_CURRENT_LIST_DIR}/gateway_jobs.cpp
            ${CMAKE_CURRENT_LIST_DIR}/gateway_history.cpp
            ${CMAKE_CURRENT_LIST_DIR}/gateway_nodes.cpp ${CMAKE_CURRENT_LIST_DIR}/registration_checks.cpp
            ${CMAKE_CURRENT_LIST_DIR}/submit_limits.cpp
            ${CMAKE_CURRENT_LIST_DIR}/job_book.cpp
            ${CMAKE_CURRENT_LIST_DIR}/client_replies.cpp ${CMAKE_CURRENT_LIST_DIR}/log_relay.cpp
            ${CMAKE_CURRENT_LIST_DIR}/token.cpp
            ${CMAKE_CURRENT_LIST_DIR}/identities.cpp ${CMAKE_CURRENT_LIST_DIR}/access.cpp
            ${CMAKE_CURRENT_LIST_DIR}/gateway_access.cpp ${CMAKE_CURRENT_LIST_DIR}/audit_log.cpp)
target_include_directories(aryl_gateway PUBLIC ${PROJECT_SOURCE_DIR})
# Identities: tokens are kept as SHA-256 hashes and made from OpenSSL's random bytes.
find_package(OpenSSL REQUIRED)
target_link_libraries(aryl_gateway PUBLIC aryl_wire aryl_tls aryl_io
                      PRIVATE Boost::boost fmt::fmt Threads::Threads OpenSSL::Crypto nlohmann_json::nlohmann_json)
target_compile_definitions(aryl_gateway PRIVATE BOOST_ASIO_NO_DEPRECATED)

# `aryl serve`: the scheduler's actors on the wall clock behind the gateway; the client
# commands (`aryl status`, `show`, `logs`, `demand`, `submit`, `cancel`).
# Included from the top level, after runtime/ and runtime/node/.
add_library(aryl_serve STATIC ${CMAKE_CURRENT_LIST_DIR}/serve.cpp
            ${CMAKE_CURRENT_LIST_DIR}/client.cpp ${CMAKE_CURRENT_LIST_DIR}/client_nodes.cpp
            ${CMAKE_CURRENT_LIST_DIR}/client_tokens.cpp ${CMAKE_CURRENT_LIST_DIR}/client_status.cpp
            ${CMAKE_CURRENT_LIST_DIR}/status_view.cpp ${CMAKE_CURRENT_LIST_DIR}/array_rows.cpp
            ${CMAKE_CURRENT_LIST_DIR}/job_file.cpp
            ${CMAKE_CURRENT_LIST_DIR}/metrics.cpp ${CMAKE_CURRENT_LIST_DIR}/serve_state.cpp
            ${CMAKE_CURRENT_LIST_DIR}/node_holds.cpp
            ${CMAKE_CURRENT_LIST_DIR}/history_answer.cpp
            ${CMAKE_CURRENT_LIST_DIR}/client_config.cpp ${CMAKE_CURRENT_LIST_DIR}/listen_policy.cpp)
target_include_directories(aryl_serve PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(aryl_serve PUBLIC aryl_driver aryl_gateway aryl_wire aryl_state_journal
                      PRIVATE Boost::boost fmt::fmt nlohmann_json::nlohmann_json yaml-cpp OpenSSL::SSL)
target_compile_definitions(aryl_serve PRIVATE BOOST_ASIO_NO_DEPRECATED)
# aryl_build_info's version: serve.cpp alone, so a new version rebuilds one file.
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/serve.cpp PROPERTIES
                            COMPILE_DEFINITIONS "ARYL_VERSION=\"${PROJECT_VERSION}\"")
include(${CMAKE_CURRENT_LIST_DIR}/history.cmake)

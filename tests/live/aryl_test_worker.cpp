// The emulated worker (runtime/live/worker.hpp) as a stand-alone program for the live tests.
#include <iostream>

#include "runtime/live/worker.hpp"

int main() { return aryl::live::run_worker(std::cerr); }

// The emulated worker (runtime/node/worker.hpp) as a stand-alone program for the live tests.
#include <iostream>

#include "runtime/node/worker.hpp"

int main() { return aryl::live::run_worker(std::cerr); }

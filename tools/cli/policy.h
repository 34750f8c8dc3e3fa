// policy.h - `polylimit policy check|explain`: a policy document checked,
// and what it does with one request (cli/README.md).
#pragma once

// argv[0] is "policy"; returns the exit status.
int run_policy(int argc, char** argv);

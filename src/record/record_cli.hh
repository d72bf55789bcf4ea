// The command line of tm-record's server and client (Boost.Program_options), and the configurations it gives.
// Bad values throw UsageError naming the option.
#pragma once

#include <boost/program_options.hpp>

#include "record/config.hh"

namespace tracemod::record {

namespace po = boost::program_options;

po::options_description common_options();
po::options_description client_options();
po::options_description server_options();
ClientConfig client_config(const po::variables_map& vm);
ServerConfig server_config(const po::variables_map& vm);

}  // namespace tracemod::record

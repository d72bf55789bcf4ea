// Firewall rules in a table with the `owner` flag: the kernel deletes the table when this object's netlink
// socket closes, so the rules go away with the shell even when it is killed with SIGKILL.
#pragma once

#include <string>

struct nft_ctx;

namespace tracemod {

class OwnedNftTable {
 public:
  // Creates table inet NAME with the given chain/rule text, in the caller's current network namespace.
  OwnedNftTable(const std::string& name, const std::string& body);
  ~OwnedNftTable();
  OwnedNftTable(const OwnedNftTable&) = delete;
  OwnedNftTable& operator=(const OwnedNftTable&) = delete;

 private:
  nft_ctx* ctx_;
};

}  // namespace tracemod

// Writes the binary seeds of fuzz/corpus with the project's own writers, so the fuzz targets start from what
// the tools really write: tm-record's raw records (record::Recorder), tm-probe's (DelimitedWriter and
// ProbeEntry, as run_probe and the prober write them: keep the header in step with run_probe's), frames with the
// virtio-net headers the kernel gives the ferry (plain, TCP and UDP GSO, IPv4 and IPv6) for the pcap writer, a
// shell's live page (live::Publisher) and the snapshots it goes on to write, DNS queries as resolvers send them
// (made with ldns) and HTTP/2 connections as a browser opens them (nghttp2's client session). Not built by default:
//
//   make fuzz/make-seeds && fuzz/make-seeds fuzz/corpus
//
// Deterministic but for the wall-clock start times in the records' headers.
#include <ldns/ldns.h>
#include <nghttp2/nghttp2.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "live/publisher.hh"
#include "packet/packet.hh"
#include "probe/probe.pb.h"
#include "probe/prober.hh"  // kRawRecordKind
#include "record/recorder.hh"
#include "util/delimited.hh"
#include "util/error.hh"

using namespace tracemod;
namespace fs = std::filesystem;

namespace {

constexpr Nanos kMs = kMillisecond;
constexpr Nanos kBoot = 5000 * kMillisecond;  // monotonic times start somewhere after boot

// A recording of N arrivals 1 ms apart (12 Mbit/s), one-way delay growing as a queue fills, with the sequence
// numbers in SKIP lost and LATE arriving after its successor. FOOTER false: the recorder was killed while it
// wrote its last entry, which is cut off.
void record_raw(const fs::path& out, int n, std::vector<int> skip, int late, bool footer) {
  const fs::path tmp = fs::temp_directory_path() / ("tm-seeds-" + std::to_string(getpid()));
  fs::create_directories(tmp);
  record::RecorderOptions o;
  o.prefix = (tmp / "rec").string();
  o.tool_version = "seed";
  o.duration = 10000 * kMs;
  {
    record::Recorder r(o);
    for (int seq = 0; seq < n; ++seq) {
      if (std::find(skip.begin(), skip.end(), seq) != skip.end() || seq == late) continue;
      const Nanos send = kBoot + seq * kMs, recv = send + 20 * kMs + (seq % 50) * kMs / 5 + 777;
      r.on_arrival(static_cast<uint64_t>(seq), send, recv, 1500);
      if (late >= 0 && seq == late + 1) r.on_arrival(static_cast<uint64_t>(late), kBoot + late * kMs, recv + 100, 1500);
    }
    r.finish("duration");
  }
  fs::copy_file(o.prefix + ".up.raw", out, fs::copy_options::overwrite_existing);
  if (!footer) fs::resize_file(out, fs::file_size(out) - 3);  // the footer cut off, as by a kill mid-write
  fs::remove_all(tmp);
}

// A probe record: a header, then TRIPLETS triplets (a small echo; on its reply two large ones back to back),
// each echo written when its reply came, every LOSE-th echo unanswered; a footer if FOOTER.
void probe_raw(const fs::path& out, int triplets, int lose, bool footer) {
  DelimitedWriter w(out.string());
  probe::ProbeEntry entry;
  probe::Header* h = entry.mutable_header();
  h->set_kind(probe::kRawRecordKind);
  h->set_format_version(1);
  h->set_tool_version("seed");
  h->set_target("192.0.2.1");
  h->set_address("192.0.2.1");
  h->set_method("udp");
  h->set_small_bytes(100);
  h->set_large_bytes(1400);
  h->set_interval_ns(250 * kMs);
  h->set_timeout_ns(2000 * kMs);
  h->set_start_unix_ns(1700000000000000000);
  w.write(entry);
  uint64_t seq = 0, replies = 0;
  for (int t = 0; t < triplets; ++t) {
    const Nanos start = kBoot + t * 250 * kMs;
    const double f = 10e6 + t * 0.1e6, vb = 1000, vr = 200;  // ns, ns per byte
    Nanos recv_small = start + static_cast<Nanos>(2 * (f + 100 * (vb + vr)));
    for (uint32_t index = 0; index < 3; ++index) {
      probe::ProbeEntry e;
      probe::Echo* echo = e.mutable_echo();
      const uint32_t size = index == 0 ? 100 : 1400;
      const Nanos send = index == 0 ? start : recv_small + 5000 + (index - 1) * 3000;
      echo->set_seq(seq);
      echo->set_triplet(static_cast<uint64_t>(t));
      echo->set_index(index);
      echo->set_size(size);
      echo->set_send_ns(send);
      echo->set_send_kernel(true);
      const bool replied = lose == 0 || (seq + 1) % static_cast<uint64_t>(lose) != 0;
      echo->set_replied(replied);
      if (replied) {
        const Nanos queued = index == 2 ? static_cast<Nanos>(1400 * vb) - 3000 : 0;
        echo->set_recv_ns(send + static_cast<Nanos>(2 * (f + size * (vb + vr))) + queued);
        ++replies;
      }
      ++seq;
      w.write(e);
      if (index == 0 && !replied) break;  // no pair without the small echo's reply
    }
  }
  if (footer) {
    probe::ProbeEntry e;
    e.mutable_footer()->set_echoes(seq);
    e.mutable_footer()->set_replies(replies);
    e.mutable_footer()->set_reason("duration");
    w.write(e);
  }
  w.close();
}

void put16(std::vector<uint8_t>& f, size_t at, uint32_t v) {
  f[at] = static_cast<uint8_t>(v >> 8);
  f[at + 1] = static_cast<uint8_t>(v);
}

// The pcap target's input: a flags byte (snap length choice), a virtio-net header, an Ethernet frame.
void frame(const fs::path& out, uint8_t flags, bool v6, uint8_t proto, uint32_t payload, uint16_t gso_size) {
  const uint32_t l3 = kEthernetHeaderSize, l4 = l3 + (v6 ? 40 : 20), head = proto == 6 ? 20 : 8;
  std::vector<uint8_t> f(l4 + head + payload, 0);
  for (int i = 0; i < 6; ++i) f[i] = static_cast<uint8_t>(2 + i), f[6 + i] = static_cast<uint8_t>(0x12 + i);
  put16(f, 12, v6 ? 0x86DD : 0x0800);
  const uint32_t l4_len = head + payload;
  if (v6) {
    f[l3] = 0x60;
    put16(f, l3 + 4, l4_len);
    f[l3 + 6] = proto;
    f[l3 + 7] = 64;
    f[l3 + 8] = 0xfd, f[l3 + 23] = 1, f[l3 + 24] = 0xfd, f[l3 + 39] = 2;
  } else {
    f[l3] = 0x45;
    put16(f, l3 + 2, 20 + l4_len);
    f[l3 + 8] = 64;
    f[l3 + 9] = proto;
    f[l3 + 12] = 100, f[l3 + 15] = 2, f[l3 + 16] = 100, f[l3 + 19] = 1;
  }
  put16(f, l4, 40000);
  put16(f, l4 + 2, 443);
  if (proto == 6) {
    f[l4 + 7] = 1;
    f[l4 + 12] = 5 << 4;
    f[l4 + 13] = 0x18;  // ACK, PSH
  } else {
    put16(f, l4 + 4, l4_len);
  }
  for (uint32_t i = 0; i < payload; ++i) f[l4 + head + i] = static_cast<uint8_t>(i * 31);
  virtio_net_hdr h{};
  h.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
  h.csum_start = static_cast<uint16_t>(l4);
  h.csum_offset = proto == 6 ? 16 : 6;
  if (gso_size) {
    h.gso_type = proto == 17 ? VIRTIO_NET_HDR_GSO_UDP_L4 : v6 ? VIRTIO_NET_HDR_GSO_TCPV6 : VIRTIO_NET_HDR_GSO_TCPV4;
    h.gso_size = gso_size;
    h.hdr_len = static_cast<uint16_t>(l4 + head);
  }
  std::ofstream o(out, std::ios::binary);
  o.put(static_cast<char>(flags));
  o.write(reinterpret_cast<const char*>(&h), sizeof h);
  o.write(reinterpret_cast<const char*>(f.data()), static_cast<std::streamsize>(f.size()));
}

// A query for NAME and TYPE as a stub resolver sends it (RD set), with an EDNS OPT record offering EDNS_SIZE
// bytes if that is not 0 (glibc with "options edns0" offers 1200, systemd-resolved 1232).
void dns_query(const fs::path& out, const char* name, ldns_rr_type type, uint16_t edns_size, uint16_t id) {
  ldns_pkt* q = nullptr;
  if (ldns_pkt_query_new_frm_str(&q, name, type, LDNS_RR_CLASS_IN, LDNS_RD) != LDNS_STATUS_OK)
    throw Error(std::string("ldns: cannot make a query for ") + name);
  ldns_pkt_set_id(q, id);
  if (edns_size) ldns_pkt_set_edns_udp_size(q, edns_size);
  uint8_t* wire = nullptr;
  size_t size = 0;
  const ldns_status status = ldns_pkt2wire(&wire, q, &size);
  ldns_pkt_free(q);
  if (status != LDNS_STATUS_OK) throw Error(std::string("ldns: cannot write the query for ") + name);
  std::ofstream(out, std::ios::binary).write(reinterpret_cast<const char*>(wire), static_cast<std::streamsize>(size));
  free(wire);
}

struct H2Request {
  std::vector<std::pair<std::string, std::string>> headers;  // pseudo-headers first
  std::string body;
};

ssize_t read_h2_body(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* flags,
                     nghttp2_data_source* source, void*) {
  auto* body = static_cast<std::string*>(source->ptr);
  const size_t n = std::min(length, body->size());
  std::memcpy(buf, body->data(), n);
  body->erase(0, n);
  if (body->empty()) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

// A browser's first flight on an h2 connection, as nghttp2's client session writes it: the preface, SETTINGS and
// a WINDOW_UPDATE as Chromium sends them, then REQUESTS (HEADERS, and DATA for a body).
void h2_connection(const fs::path& out, std::vector<H2Request> requests) {
  nghttp2_session_callbacks* cb = nullptr;
  nghttp2_session_callbacks_new(&cb);
  nghttp2_session* session = nullptr;
  nghttp2_session_client_new(&session, cb, nullptr);
  nghttp2_session_callbacks_del(cb);
  const nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, 65536},
                                             {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
                                             {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 6291456},
                                             {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, 262144}};
  nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, settings, 4);
  nghttp2_submit_window_update(session, NGHTTP2_FLAG_NONE, 0, 15663105);
  for (H2Request& r : requests) {
    std::vector<nghttp2_nv> nv;
    for (auto& [n, v] : r.headers)
      nv.push_back({reinterpret_cast<uint8_t*>(n.data()), reinterpret_cast<uint8_t*>(v.data()), n.size(), v.size(),
                    NGHTTP2_NV_FLAG_NONE});
    nghttp2_data_provider body{};
    body.source.ptr = &r.body;
    body.read_callback = read_h2_body;
    if (nghttp2_submit_request(session, nullptr, nv.data(), nv.size(), r.body.empty() ? nullptr : &body, nullptr) < 0)
      throw Error("nghttp2: cannot submit a request");
  }
  std::ofstream o(out, std::ios::binary);
  for (;;) {
    const uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(session, &data);
    if (n < 0) throw Error("nghttp2: cannot write the connection");
    if (n == 0) break;
    o.write(reinterpret_cast<const char*>(data), n);
  }
  nghttp2_session_del(session);
}

// A GET of PATH from a.test as Chromium asks for it; a navigation if DOCUMENT.
H2Request h2_get(const std::string& path, bool document, std::vector<std::pair<std::string, std::string>> more = {}) {
  H2Request r;
  r.headers = {{":method", "GET"},
               {":authority", "a.test"},
               {":scheme", "https"},
               {":path", path},
               {"user-agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0"},
               {"accept", document ? "text/html,application/xhtml+xml,*/*;q=0.8" : "*/*"},
               {"sec-fetch-mode", document ? "navigate" : "no-cors"},
               {"sec-fetch-dest", document ? "document" : "script"},
               {"accept-encoding", "gzip, deflate, br, zstd"},
               {"accept-language", "en-US,en;q=0.9"}};
  r.headers.insert(r.headers.end(), more.begin(), more.end());
  return r;
}

// The page a shell's live::Publisher writes (with no link: its counters 0), then EXTRA snapshots 100 ms apart of
// a downlink delivering 12 Mbit/s out of 12 offered, a queue, drops, a mean stay of 20 ms, "on" (tm-onoff), and a
// quiet uplink, as the shell rewrites them; the last one ended if ENDED.
void live_page(const fs::path& out, int extra, bool ended) {
  live::ShellFacts facts{"tm-onoff", "[onoff 12mbit]", "--rate 12mbit --on 2s --off 100ms",
                         "chromium --headless --disable-gpu https://a.test/", 1};
  const live::Publisher publisher(facts, {}, kBoot);
  std::string page;
  for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    if (fs::read_symlink(entry.path(), ec).string() != std::string("/memfd:") + live::kMemfdName + " (deleted)")
      continue;
    page.resize(sizeof(live::Page));
    if (pread(std::stoi(entry.path().filename().string()), page.data(), page.size(), 0) != ssize_t(page.size()))
      throw Error("cannot read the live page");
    break;
  }
  if (page.empty()) throw Error("no live page in /proc/self/fd");
  std::ofstream o(out, std::ios::binary);
  o.write(page.data(), static_cast<std::streamsize>(page.size()));
  for (int i = 1; i <= extra; ++i) {
    live::Snapshot s{};
    s.published = kBoot + i * 100 * kMs;
    s.ended = ended && i == extra ? 1 : 0;
    live::Direction& down = s.dir[1];
    const auto set = [](live::Direction& d, live::Figure f, uint64_t v) { d.value[f] = v; };
    set(down, live::kArrived, i * 152000u), set(down, live::kDelivered, i * 150000u);
    set(down, live::kInPackets, i * 102u), set(down, live::kOutPackets, i * 100u);
    set(down, live::kQueuedPackets, 1), set(down, live::kQueuedBytes, 1500);
    set(down, live::kDropsQueue, i), set(down, live::kDropsTotal, i);
    set(down, live::kOffered, i * 150000u), down.limited = 1;
    set(down, live::kDeparted, i * 100u), set(down, live::kDelay, i * 100 * 20 * kMs);
    set(down, live::kDelayMax, 31 * kMs);
    std::strcpy(down.state, "on");
    set(s.dir[0], live::kArrived, i * 3000u), set(s.dir[0], live::kDelivered, i * 3000u);
    set(s.dir[0], live::kDeparted, i * 40u), set(s.dir[0], live::kDelay, i * 40 * 200000);
    o.write(reinterpret_cast<const char*>(&s), sizeof s);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz/make-seeds fuzz/corpus\n";
    return 2;
  }
  const fs::path corpus = argv[1];
  try {
    for (const char* d : {"record-raw", "probe-raw", "pcap", "dns", "replay-http2", "live-page"})
      fs::create_directories(corpus / d);
    record_raw(corpus / "record-raw" / "recorded.raw", 120, {17, 18, 60}, 90, true);
    record_raw(corpus / "record-raw" / "killed.raw", 40, {}, -1, false);
    probe_raw(corpus / "probe-raw" / "probed.raw", 24, 0, true);
    probe_raw(corpus / "probe-raw" / "lossy-killed.raw", 16, 7, false);
    frame(corpus / "pcap" / "udp4", 0, false, 17, 100, 0);
    frame(corpus / "pcap" / "udp4-whole", 1, false, 17, 100, 0);
    frame(corpus / "pcap" / "tcp4-gso", 0, false, 6, 4000, 1448);
    frame(corpus / "pcap" / "tcp6-gso-whole", 1, true, 6, 3000, 1200);
    frame(corpus / "pcap" / "udp6-gso", 4, true, 17, 2500, 1000);
    frame(corpus / "pcap" / "tcp4-tiny-mss", 3, false, 6, 64, 7);
    dns_query(corpus / "dns" / "a", "a.test.", LDNS_RR_TYPE_A, 0, 0x1a2b);
    dns_query(corpus / "dns" / "aaaa-edns", "www.a.test.", LDNS_RR_TYPE_AAAA, 1232, 0x3c4d);
    dns_query(corpus / "dns" / "upper-case", "B.TEST.", LDNS_RR_TYPE_A, 0, 7);
    dns_query(corpus / "dns" / "many-cut-to-tc", "many.test.", LDNS_RR_TYPE_A, 0, 0xbeef);
    dns_query(corpus / "dns" / "many-any-edns", "many.test.", LDNS_RR_TYPE_ANY, 4096, 0xcafe);
    dns_query(corpus / "dns" / "unknown-mx", "example.com.", LDNS_RR_TYPE_MX, 1200, 0x0101);
    h2_connection(corpus / "replay-http2" / "page-load",
                  {h2_get("/", true), h2_get("/style.css", false), h2_get("/app.js?x=1&v=2", false),
                   h2_get("/missing.png", false)});
    H2Request post = h2_get("/api", false, {{"content-type", "application/json"}});
    post.headers[0].second = "POST";
    post.body = "{\"q\":1}";
    H2Request head = h2_get("/", false);
    head.headers[0].second = "HEAD";
    h2_connection(corpus / "replay-http2" / "revalidate-post-head",
                  {h2_get("/style.css", false, {{"if-none-match", "\"v1\""}}), post, head, h2_get("/cached.css", false),
                   h2_get("/again", false), h2_get("/again", false), h2_get("/aborted", false), h2_get("/old", false)});
    live_page(corpus / "live-page" / "published", 0, false);
    live_page(corpus / "live-page" / "twelve-mbit-for-a-second", 8, false);
    live_page(corpus / "live-page" / "ended", 2, true);
  } catch (const std::exception& e) {
    std::cerr << "make-seeds: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

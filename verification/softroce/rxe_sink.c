/* SPDX-License-Identifier: GPL-3.0-or-later
 *
 * rxe_sink: the receiving end of an RDMA WRITE stream over an Unreliable Connection QP,
 * run inside the soft-RoCE test VM against Linux's rdma_rxe.
 *
 * It registers a buffer (filled with a known byte so that any write shows), creates a UC
 * QP whose remote end is the sender's IPv4 address (rxe checks every packet's source
 * address against it), brings it to RTR with the given starting PSN, posts receive
 * requests for the immediates, and writes its connection parameters to
 * <out>/params.json. Every completion is appended to <out>/events.txt as
 * "<status> <opcode> <imm> <byte_len>". It stops when <out>/stop appears (or after
 * --timeout seconds), then writes the buffer to <out>/buffer.bin.
 *
 * With --send-bytes N it is also a requester: it moves the QP to RTS (send PSN = --psn),
 * fills the buffer's first N + SEND_TAIL bytes with send_pattern(), and posts an RDMA WRITE
 * with immediate (--send-imm) of N bytes and a plain RDMA WRITE of SEND_TAIL bytes to
 * --send-va/--send-rkey at the peer; rxe's own frames then come out of the NIC, and their
 * send completions go to events.txt too.
 *
 * usage: rxe_sink --dev rxe0 --peer-ip A.B.C.D --peer-qpn N --psn N --mtu 1024
 *                 --size BYTES --fill BYTE --out DIR [--timeout S]
 *                 [--send-bytes N --send-va VA --send-rkey K --send-imm I]
 * Exit status: 0 when it ran to the stop file, 1 on a setup error (message on stderr),
 * 2 on timeout.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RECV_DEPTH 256
#define PORT 1
#define SEND_TAIL 100

struct options {
	const char *dev, *peer_ip, *out;
	uint32_t peer_qpn, psn;
	int mtu;
	size_t size;
	int fill;
	double timeout;
	size_t send_bytes;
	uint64_t send_va;
	uint32_t send_rkey, send_imm;
};

/* The bytes the requester mode sends: known to the host without being told. */
static uint8_t send_pattern(size_t i)
{
	return (uint8_t)(i * 131 + 7);
}

static void die(const char *what, int err)
{
	fprintf(stderr, "rxe_sink: %s: %s\n", what, strerror(err));
	exit(1);
}

static void usage(const char *msg)
{
	fprintf(stderr, "rxe_sink: %s\n", msg);
	exit(1);
}

static unsigned long parse_num(const char *name, const char *s, unsigned long max)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 0);
	if (errno || *end || v > max) {
		fprintf(stderr, "rxe_sink: bad %s %s\n", name, s);
		exit(1);
	}
	return v;
}

static void parse(int argc, char **argv, struct options *o)
{
	memset(o, 0, sizeof(*o));
	o->fill = -1;
	o->timeout = 120;
	for (int i = 1; i + 1 < argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];
		if (!strcmp(k, "--dev"))
			o->dev = v;
		else if (!strcmp(k, "--peer-ip"))
			o->peer_ip = v;
		else if (!strcmp(k, "--out"))
			o->out = v;
		else if (!strcmp(k, "--peer-qpn"))
			o->peer_qpn = parse_num(k, v, 0xFFFFFF);
		else if (!strcmp(k, "--psn"))
			o->psn = parse_num(k, v, 0xFFFFFF);
		else if (!strcmp(k, "--mtu"))
			o->mtu = parse_num(k, v, 4096);
		else if (!strcmp(k, "--size"))
			o->size = parse_num(k, v, 1UL << 30);
		else if (!strcmp(k, "--fill"))
			o->fill = parse_num(k, v, 255);
		else if (!strcmp(k, "--timeout"))
			o->timeout = parse_num(k, v, 3600);
		else if (!strcmp(k, "--send-bytes"))
			o->send_bytes = parse_num(k, v, 1UL << 30);
		else if (!strcmp(k, "--send-va"))
			o->send_va = strtoull(v, NULL, 0);
		else if (!strcmp(k, "--send-rkey"))
			o->send_rkey = parse_num(k, v, 0xFFFFFFFFUL);
		else if (!strcmp(k, "--send-imm"))
			o->send_imm = parse_num(k, v, 0xFFFFFFFFUL);
		else
			usage("unknown option");
	}
	if (argc % 2 == 0 || !o->dev || !o->peer_ip || !o->out || !o->mtu || !o->size ||
	    o->fill < 0)
		usage("need --dev --peer-ip --peer-qpn --psn --mtu --size --fill --out");
	if (o->send_bytes && o->send_bytes + SEND_TAIL > o->size)
		usage("--send-bytes does not fit in --size");
}

static enum ibv_mtu mtu_enum(int mtu)
{
	switch (mtu) {
	case 256: return IBV_MTU_256;
	case 512: return IBV_MTU_512;
	case 1024: return IBV_MTU_1024;
	case 2048: return IBV_MTU_2048;
	case 4096: return IBV_MTU_4096;
	}
	usage("--mtu must be 256, 512, 1024, 2048 or 4096");
	return IBV_MTU_1024;
}

/* The RoCE v2 GID holding an IPv4-mapped address: the one rxe sources IPv4 packets from. */
static int roce_v2_ipv4_gid(struct ibv_context *ctx, int tbl_len, struct ibv_gid_entry *out)
{
	static const uint8_t v4_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	for (int i = 0; i < tbl_len; i++) {
		struct ibv_gid_entry e;
		if (ibv_query_gid_ex(ctx, PORT, i, &e, 0))
			continue;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 && !memcmp(e.gid.raw, v4_prefix, 12)) {
			*out = e;
			return 0;
		}
	}
	return -1;
}

static void write_file_atomic(const char *dir, const char *name, const void *data, size_t len)
{
	char tmp[4096], final[4096];
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
	snprintf(final, sizeof(final), "%s/%s", dir, name);
	FILE *f = fopen(tmp, "wb");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f))
		die(tmp, errno);
	if (rename(tmp, final))
		die(final, errno);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	struct options o;
	parse(argc, argv, &o);
	struct in_addr peer;
	if (inet_pton(AF_INET, o.peer_ip, &peer) != 1)
		usage("--peer-ip is not an IPv4 address");

	int n;
	struct ibv_device **list = ibv_get_device_list(&n);
	if (!list)
		die("ibv_get_device_list", errno);
	struct ibv_device *dev = NULL;
	for (int i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), o.dev))
			dev = list[i];
	if (!dev) {
		fprintf(stderr, "rxe_sink: no RDMA device %s (%d devices)\n", o.dev, n);
		return 1;
	}
	struct ibv_context *ctx = ibv_open_device(dev);
	if (!ctx)
		die("ibv_open_device", errno);
	struct ibv_port_attr port;
	if (ibv_query_port(ctx, PORT, &port))
		die("ibv_query_port", errno);
	if (port.state != IBV_PORT_ACTIVE) {
		fprintf(stderr, "rxe_sink: port %d of %s is not ACTIVE (%d)\n", PORT, o.dev,
			port.state);
		return 1;
	}
	struct ibv_gid_entry gid;
	if (roce_v2_ipv4_gid(ctx, port.gid_tbl_len, &gid)) {
		fprintf(stderr, "rxe_sink: %s has no RoCE v2 IPv4 GID\n", o.dev);
		return 1;
	}

	uint8_t *buf;
	if (posix_memalign((void **)&buf, 4096, o.size))
		die("posix_memalign", ENOMEM);
	memset(buf, o.fill, o.size);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	if (!pd)
		die("ibv_alloc_pd", errno);
	struct ibv_mr *mr =
		ibv_reg_mr(pd, buf, o.size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		die("ibv_reg_mr", errno);
	struct ibv_cq *cq = ibv_create_cq(ctx, RECV_DEPTH * 2, NULL, NULL, 0);
	if (!cq)
		die("ibv_create_cq", errno);
	struct ibv_qp_init_attr qia = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = {.max_send_wr = 2, .max_recv_wr = RECV_DEPTH, .max_send_sge = 1,
			.max_recv_sge = 1},
		.qp_type = IBV_QPT_UC,
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &qia);
	if (!qp)
		die("ibv_create_qp(UC)", errno);

	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = PORT,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	int err = ibv_modify_qp(qp, &a,
				IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (err)
		die("ibv_modify_qp(INIT)", err);
	/* WRITE with immediate consumes a receive request; it carries no data of its own. */
	for (int i = 0; i < RECV_DEPTH; i++) {
		struct ibv_recv_wr wr = {.wr_id = i, .sg_list = NULL, .num_sge = 0}, *bad;
		err = ibv_post_recv(qp, &wr, &bad);
		if (err)
			die("ibv_post_recv", err);
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu_enum(o.mtu);
	a.dest_qp_num = o.peer_qpn;
	a.rq_psn = o.psn;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = PORT;
	a.ah_attr.grh.sgid_index = gid.gid_index;
	a.ah_attr.grh.hop_limit = 64;
	memset(a.ah_attr.grh.dgid.raw, 0, 10);
	a.ah_attr.grh.dgid.raw[10] = 0xff;
	a.ah_attr.grh.dgid.raw[11] = 0xff;
	memcpy(&a.ah_attr.grh.dgid.raw[12], &peer, 4);
	err = ibv_modify_qp(qp, &a,
			    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				    IBV_QP_RQ_PSN);
	if (err)
		die("ibv_modify_qp(RTR)", err);

	char ifname[IF_NAMESIZE] = "", path[4096], mac[32] = "";
	if (if_indextoname(gid.ndev_ifindex, ifname)) {
		snprintf(path, sizeof(path), "/sys/class/net/%s/address", ifname);
		FILE *f = fopen(path, "r");
		if (f) {
			if (fscanf(f, "%31s", mac) != 1)
				mac[0] = 0;
			fclose(f);
		}
	}
	char gid_str[INET6_ADDRSTRLEN], ip_str[INET_ADDRSTRLEN];
	inet_ntop(AF_INET6, gid.gid.raw, gid_str, sizeof(gid_str));
	inet_ntop(AF_INET, &gid.gid.raw[12], ip_str, sizeof(ip_str));
	char json[1024];
	int len = snprintf(json, sizeof(json),
			   "{\"qpn\": %u, \"psn\": %u, \"rkey\": %u, \"va\": %llu, \"size\": %zu, "
			   "\"fill\": %d, \"mtu\": %d, \"gid\": \"%s\", \"gid_index\": %u, "
			   "\"ip\": \"%s\", \"mac\": \"%s\", \"netdev\": \"%s\"}\n",
			   qp->qp_num, o.psn, mr->rkey, (unsigned long long)(uintptr_t)buf, o.size,
			   o.fill, o.mtu, gid_str, gid.gid_index, ip_str, mac, ifname);
	write_file_atomic(o.out, "params.json", json, len);

	snprintf(path, sizeof(path), "%s/events.txt", o.out);
	FILE *events = fopen(path, "w");
	if (!events)
		die(path, errno);
	if (o.send_bytes) {
		for (size_t i = 0; i < o.send_bytes + SEND_TAIL; i++)
			buf[i] = send_pattern(i);
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = o.psn;
		err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
		if (err)
			die("ibv_modify_qp(RTS)", err);
		struct ibv_sge sge[2] = {
			{.addr = (uintptr_t)buf, .length = o.send_bytes, .lkey = mr->lkey},
			{.addr = (uintptr_t)buf + o.send_bytes, .length = SEND_TAIL, .lkey = mr->lkey},
		};
		struct ibv_send_wr wr[2] = {
			{.wr_id = 1, .next = &wr[1], .sg_list = &sge[0], .num_sge = 1,
			 .opcode = IBV_WR_RDMA_WRITE_WITH_IMM, .send_flags = IBV_SEND_SIGNALED,
			 .imm_data = htonl(o.send_imm),
			 .wr.rdma = {.remote_addr = o.send_va, .rkey = o.send_rkey}},
			{.wr_id = 2, .sg_list = &sge[1], .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
			 .send_flags = IBV_SEND_SIGNALED,
			 .wr.rdma = {.remote_addr = o.send_va + o.send_bytes, .rkey = o.send_rkey}},
		};
		struct ibv_send_wr *bad;
		err = ibv_post_send(qp, wr, &bad);
		if (err)
			die("ibv_post_send", err);
	}
	char stop[4096];
	snprintf(stop, sizeof(stop), "%s/stop", o.out);
	double deadline = now() + o.timeout;
	int rc = 0;
	for (;;) {
		struct ibv_wc wc[16];
		int got = ibv_poll_cq(cq, 16, wc);
		if (got < 0)
			die("ibv_poll_cq", EIO);
		for (int i = 0; i < got; i++)
			fprintf(events, "%d %d %u %u\n", wc[i].status, wc[i].opcode,
				ntohl(wc[i].imm_data), wc[i].byte_len);
		if (got) {
			fflush(events);
			continue;
		}
		struct stat st;
		if (!stat(stop, &st)) {
			/* A completion may have landed between the empty poll and the stat. */
			while ((got = ibv_poll_cq(cq, 16, wc)) > 0)
				for (int i = 0; i < got; i++)
					fprintf(events, "%d %d %u %u\n", wc[i].status, wc[i].opcode,
						ntohl(wc[i].imm_data), wc[i].byte_len);
			break;
		}
		if (now() > deadline) {
			fprintf(stderr, "rxe_sink: no stop file after %.0f s\n", o.timeout);
			rc = 2;
			break;
		}
		usleep(20000);
	}
	fclose(events);
	write_file_atomic(o.out, "buffer.bin", buf, o.size);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	free(buf);
	return rc;
}

/*
 * resolve looks each name up with getaddrinfo, as an application does,
 * through the C library it is linked with (musl or glibc) and so through
 * /etc/resolv.conf: its nameservers, search list and options.
 *
 * Usage: resolve NAME...   (or, without arguments, one name a line on stdin)
 *
 * For each name it prints one line:
 *
 *   BOOTTIME NAME STATUS ADDRESSES MS
 *
 * BOOTTIME is when the lookup began, in seconds of CLOCK_BOOTTIME (the clock
 * of /proc/uptime, the same in every container of the machine); STATUS is
 * "ok" or the name of getaddrinfo's EAI_ error; ADDRESSES are the addresses
 * found, comma-separated, or "-"; MS is how long getaddrinfo took, in
 * milliseconds. The line is written at once (one write, so that lines of
 * processes sharing a pipe do not interleave).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double seconds(clockid_t clock) {
	struct timespec ts;
	clock_gettime(clock, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *eai_name(int rc) {
	switch (rc) {
	case EAI_AGAIN: return "EAI_AGAIN";
	case EAI_BADFLAGS: return "EAI_BADFLAGS";
	case EAI_FAIL: return "EAI_FAIL";
	case EAI_FAMILY: return "EAI_FAMILY";
	case EAI_MEMORY: return "EAI_MEMORY";
	case EAI_NONAME: return "EAI_NONAME";
	case EAI_SERVICE: return "EAI_SERVICE";
	case EAI_SOCKTYPE: return "EAI_SOCKTYPE";
	case EAI_SYSTEM: return "EAI_SYSTEM";
#ifdef EAI_NODATA
	case EAI_NODATA: return "EAI_NODATA";
#endif
#ifdef EAI_ADDRFAMILY
	case EAI_ADDRFAMILY: return "EAI_ADDRFAMILY";
#endif
	}
	return "EAI_UNKNOWN";
}

static void resolve(const char *name) {
	/* Both families and no AI_ADDRCONFIG: an A and an AAAA question for
	 * every name the search walks, as getaddrinfo(name, NULL, NULL) asks
	 * on a dual-stack host. */
	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;

	double at = seconds(CLOCK_BOOTTIME);
	double start = seconds(CLOCK_MONOTONIC);
	int rc = getaddrinfo(name, NULL, &hints, &res);
	double ms = (seconds(CLOCK_MONOTONIC) - start) * 1000;

	char addrs[512] = "-";
	size_t n = 0;
	for (struct addrinfo *ai = res; rc == 0 && ai != NULL; ai = ai->ai_next) {
		char buf[INET6_ADDRSTRLEN];
		const void *a = ai->ai_family == AF_INET
			? (const void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr
			: (const void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;
		if (inet_ntop(ai->ai_family, a, buf, sizeof buf) == NULL)
			continue;
		int w = snprintf(addrs + n, sizeof addrs - n, "%s%s", n ? "," : "", buf);
		if (w < 0 || (size_t)w >= sizeof addrs - n)
			break;
		n += w;
	}
	if (res != NULL)
		freeaddrinfo(res);

	char line[1024];
	int len = snprintf(line, sizeof line, "%.3f %s %s %s %.1f\n", at, name,
		rc == 0 ? "ok" : eai_name(rc), addrs, ms);
	if (len > 0)
		(void)write(1, line, (size_t)len < sizeof line ? (size_t)len : sizeof line - 1);
}

int main(int argc, char **argv) {
	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			resolve(argv[i]);
		return 0;
	}
	char name[512];
	while (fgets(name, sizeof name, stdin) != NULL) {
		name[strcspn(name, "\r\n")] = 0;
		if (name[0] != 0)
			resolve(name);
	}
	return 0;
}

/* recorder: records its own user stack in a frameless leaf (registers and
   the stack's bytes from the stack pointer to the top), and its mappings,
   into the file argv[1], for the unwinders' tests to walk offline.
   Layout: rip, rsp, rbp, n (u64 each), n bytes of stack, then the text of
   /proc/self/maps. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

static uint64_t top, regs[3];
static unsigned char stack[1 << 16];
static uint64_t used;

__attribute__((noinline)) long leaf(long *v, int n) {
	uint64_t ip, sp, bp;
	__asm__ volatile("lea (%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" : "=r"(ip), "=r"(sp), "=r"(bp));
	regs[0] = ip, regs[1] = sp, regs[2] = bp;
	used = top - sp < sizeof stack ? top - sp : sizeof stack;
	memcpy(stack, (void *)sp, used);
	long s = 0;
	for (int i = 0; i < n; i++) s += v[i] * 3;
	return s;
}
__attribute__((noinline)) long middle(int n) { long v[64]; for (int i = 0; i < 64; i++) v[i] = i + n; return leaf(v, 64) + n; }
__attribute__((noinline)) long outer(int n) { char *p = malloc(n + 1); memset(p, 1, n); long s = middle(n) + p[n / 2]; free(p); return s; }

int main(int argc, char **argv) {
	char line[4096];
	FILE *m = fopen("/proc/self/maps", "r");
	while (fgets(line, sizeof line, m))
		if (strstr(line, "[stack]")) top = strtoull(strchr(line, '-') + 1, 0, 16);
	fclose(m);
	long s = outer(5);
	FILE *out = fopen(argv[1], "w");
	uint64_t hdr[4] = {regs[0], regs[1], regs[2], used};
	fwrite(hdr, 8, 4, out);
	fwrite(stack, 1, used, out);
	m = fopen("/proc/self/maps", "r");
	size_t k;
	while ((k = fread(line, 1, sizeof line, m)) > 0) fwrite(line, 1, k, out);
	fclose(m);
	fclose(out);
	return s == 0;
}

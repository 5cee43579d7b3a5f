/* deep: the workload of bench/compare's ustack measurement. It descends
 * DEPTH frames of recursion and there calls f N times, printing the mean
 * nanoseconds per call: with main and libc's start-up frames below, the
 * stack at f is 20 frames deep by default. Built with frame pointers so
 * that bpftrace's frame-pointer walk sees the whole stack too. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__attribute__((noinline)) int f(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

static long calls;

__attribute__((noinline)) int down(int depth)
{
	int r = 0;
	if (depth > 0) {
		r = down(depth - 1);
	} else {
		for (long i = 0; i < calls; i++)
			r += f((int)i);
	}
	/* Keeps the recursive call out of tail position. */
	__asm__ volatile("" : "+r"(r) : : "memory");
	return r;
}

int main(int argc, char **argv)
{
	calls = argc > 1 ? atol(argv[1]) : 100000;
	int depth = argc > 2 ? atoi(argv[2]) : 15;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	int r = down(depth);
	clock_gettime(CLOCK_MONOTONIC, &b);
	double ns = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
	printf("%.1f\n", ns / calls);
	return r == 42; /* r is used: the loop stays */
}

/*
 * cpu.c: which instruction set the numeric kernels use on this machine.
 *
 * The library is compiled for x86-64-v3 (AVX2 + FMA); kernels built for
 * AVX-512 live in their own files and run only when rt_cpu_isa() says so.
 * Whether the machine has AVX-512 is base_cpu_avx512()'s answer.
 *
 * The choice is made once, at first use, and cached: the environment
 * variable STRATA_CPU picks "avx2" (the AVX2 kernels even where AVX-512
 * exists), "avx512" (used only when the machine has it) or "auto"; unset,
 * empty or any other value means auto, the best the machine has, so a typo
 * never disables the wide kernels silently for a deployment that meant
 * auto.  rt_cpu_force() overrides the choice for tests.
 *
 * It also reports the sizes of the core's L1 data and L2 caches, from
 * which the GEMM driver derives its block sizes (gemm.c), and whether the
 * machine has AVX512-VNNI, which the int8 kernels use along with AVX-512,
 * or AVX-VNNI, which they use on machines without AVX-512 (qgemm.c), and
 * whether it has AMX tiles that Linux lets this process use, which the
 * int8 and bfloat16 GEMMs use in auto mode only: STRATA_CPU=avx512 (or
 * rt_cpu_force(RT_ISA_AVX512)) holds the kernels to AVX-512 registers.
 *
 * Invariant: rt_cpu_isa() never returns an ISA the machine cannot execute.
 */
#include <cpuid.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime_int.h"
#include "ops/gemm_kern.h"

/* 0: not decided yet; else an RT_ISA_* value.  Relaxed atomics: racing
 * first uses compute the same answer. */
static int chosen;
static int forced;
/* STRATA_CPU=avx2 and =avx512, as read (0: not yet; 1: no; 2: yes); reset
 * with chosen. */
static int env_avx2, env_avx512;
static int hw_best;

static int detect(void)
{
	return base_cpu_avx512() ? RT_ISA_AVX512 : RT_ISA_AVX2;
}

int rt_cpu_best(void)
{
	int best = __atomic_load_n(&hw_best, __ATOMIC_RELAXED);
	if (!best) {
		best = detect();
		__atomic_store_n(&hw_best, best, __ATOMIC_RELAXED);
	}
	return best;
}

int rt_cpu_select(const char *env)
{
	int best = rt_cpu_best();
	if (env && strcmp(env, "avx2") == 0)
		return RT_ISA_AVX2;
	return best;
}

int rt_cpu_isa(void)
{
	int f = __atomic_load_n(&forced, __ATOMIC_RELAXED);
	if (f)
		return f;
	int isa = __atomic_load_n(&chosen, __ATOMIC_RELAXED);
	if (!isa) {
		isa = rt_cpu_select(getenv("STRATA_CPU"));
		__atomic_store_n(&chosen, isa, __ATOMIC_RELAXED);
	}
	return isa;
}

int rt_cpu_force(int isa)
{
	if (isa == RT_ISA_AUTO) {
		__atomic_store_n(&forced, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&chosen, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&env_avx2, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&env_avx512, 0, __ATOMIC_RELAXED);
		return 0;
	}
	if (isa != RT_ISA_AVX2 && isa != RT_ISA_AVX512)
		return STRATA_INVALID_ARGUMENT;
	if (isa == RT_ISA_AVX512 && rt_cpu_best() != RT_ISA_AVX512)
		return STRATA_NOT_IMPLEMENTED;
	__atomic_store_n(&forced, isa, __ATOMIC_RELAXED);
	return 0;
}

/* Bit `bit` of register reg (0 eax, 2 ecx) of cpuid leaf 7, subleaf sub;
 * 0 when the CPU has no leaf 7. */
static int leaf7_bit(unsigned int sub, int reg, int bit)
{
	unsigned int r[4] = { 0, 0, 0, 0 };
	if (__get_cpuid_max(0, NULL) >= 7)
		__cpuid_count(7, sub, r[0], r[1], r[2], r[3]);
	return (r[reg] >> bit) & 1;
}

/* A feature asked once: *slot is 0 (not asked yet), 1 (no) or 2 (yes);
 * relaxed atomics, racing first uses compute the same answer. */
static int feature(int *slot, unsigned int sub, int reg, int bit, int needs_avx512)
{
	int v = __atomic_load_n(slot, __ATOMIC_RELAXED);
	if (!v) {
		v = (!needs_avx512 || base_cpu_avx512()) && leaf7_bit(sub, reg, bit) ? 2 : 1;
		__atomic_store_n(slot, v, __ATOMIC_RELAXED);
	}
	return v == 2;
}

static int vnni, bf16, avxvnni;

int rt_cpu_vnni(void)
{
	return feature(&vnni, 0, 2, 11, 1); /* ecx bit 11: AVX512_VNNI */
}

int rt_cpu_bf16(void)
{
	return feature(&bf16, 1, 0, 5, 1); /* subleaf 1, eax bit 5: AVX512_BF16 */
}

/* 1 on AMD's processors: cpuid leaf 0's ebx, the vendor's first four
 * letters, "Auth" (AuthenticAMD) or "Hygo" (HygonGenuine, the same cores). */
static int vendor_amd(void)
{
	unsigned int ebx = 0;
	__get_cpuid_max(0, &ebx);
	return ebx == 0x68747541u || ebx == 0x6f677948u;
}

static int bf16_forced = -1;

void rt_cpu_bf16_force(int on)
{
	__atomic_store_n(&bf16_forced, on, __ATOMIC_RELAXED);
}

int rt_cpu_bf16_faster(void)
{
	if (!rt_cpu_bf16())
		return 0;
	int f = __atomic_load_n(&bf16_forced, __ATOMIC_RELAXED);
	return f >= 0 ? f : vendor_amd() || rt_cpu_amx();
}

int rt_cpu_avxvnni(void)
{
	/* subleaf 1, eax bit 4: AVX-VNNI, the VEX form of vpdpbusd on xmm and
	 * ymm; the library's AVX2 baseline has already checked that the OS
	 * saves ymm state */
	return feature(&avxvnni, 1, 0, 4, 0);
}

/* STRATA_CPU == name, read once into *slot (0: not yet; 1: no; 2: yes). */
static int env_is(int *slot, const char *name)
{
	int v = __atomic_load_n(slot, __ATOMIC_RELAXED);
	if (!v) {
		const char *env = getenv("STRATA_CPU");
		v = env && strcmp(env, name) == 0 ? 2 : 1;
		__atomic_store_n(slot, v, __ATOMIC_RELAXED);
	}
	return v == 2;
}

int rt_cpu_baseline_only(void)
{
	int f = __atomic_load_n(&forced, __ATOMIC_RELAXED);
	if (f)
		return f == RT_ISA_AVX2;
	return env_is(&env_avx2, "avx2");
}

/* ---- AMX ----------------------------------------------------------------------
 * Three things must hold: the CPU has AMX-TILE, AMX-INT8 and AMX-BF16
 * (cpuid leaf 7, edx bits 24, 25 and 22); the OS manages the tile state
 * (XCR0 bits 17, XTILECFG, and 18, XTILEDATA); and Linux grants this
 * process the tile data (arch_prctl ARCH_REQ_XCOMP_PERM for feature 18,
 * Linux 5.16 and later; a process-wide permission, asked once).  Any of
 * them failing leaves the AVX-512 kernels in use. */

enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };

static int amx_hw; /* 0: not asked yet; 1: no; 2: yes */

static uint64_t xcr0(void)
{
	uint32_t lo, hi;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return (uint64_t)hi << 32 | lo;
}

int rt_cpu_amx_usable(void)
{
	int v = __atomic_load_n(&amx_hw, __ATOMIC_RELAXED);
	if (!v) {
		v = 1;
		if (base_cpu_avx512() && leaf7_bit(0, 3, 24) && leaf7_bit(0, 3, 25) &&
		    leaf7_bit(0, 3, 22) && (xcr0() & (3u << 17)) == (3u << 17) &&
		    syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0)
			v = 2;
		__atomic_store_n(&amx_hw, v, __ATOMIC_RELAXED);
	}
	return v == 2;
}

int rt_cpu_amx(void)
{
	return __atomic_load_n(&forced, __ATOMIC_RELAXED) == 0 && rt_cpu_isa() == RT_ISA_AVX512 &&
	       !env_is(&env_avx512, "avx512") && rt_cpu_amx_usable();
}

const char *rt_cpu_isa_name(int isa)
{
	switch (isa) {
	case RT_ISA_AVX2: return "avx2";
	case RT_ISA_AVX512: return "avx512";
	}
	return "auto";
}

/* ---- cache sizes ------------------------------------------------------------- */

static int64_t l1d_bytes, l2_bytes;

/* Walk the deterministic cache parameters (cpuid leaf 4 on Intel,
 * 0x8000001D on AMD: the same format) for the level-1 data and level-2
 * caches of one core. */
static void cache_walk(unsigned int leaf, int64_t *l1, int64_t *l2)
{
	for (unsigned int i = 0; i < 16; i++) {
		unsigned int a, b, c, d;
		__cpuid_count(leaf, i, a, b, c, d);
		unsigned int type = a & 31, level = (a >> 5) & 7;
		if (type == 0)
			break;
		int64_t size = (int64_t)((b >> 22) + 1) * (((b >> 12) & 0x3ff) + 1) *
		               ((b & 0xfff) + 1) * ((int64_t)c + 1);
		if (level == 1 && type == 1)
			*l1 = size;
		else if (level == 2 && (type == 3 || type == 1))
			*l2 = size;
	}
}

void rt_cpu_caches(int64_t *l1d, int64_t *l2)
{
	int64_t a = __atomic_load_n(&l1d_bytes, __ATOMIC_RELAXED);
	int64_t b = __atomic_load_n(&l2_bytes, __ATOMIC_RELAXED);
	if (!a || !b) {
		unsigned int eax, ebx, ecx, edx;
		int64_t l1 = 0, l2c = 0;
		unsigned int max = __get_cpuid_max(0, &ebx);
		int amd = vendor_amd();
		if (amd) {
			unsigned int ext = __get_cpuid_max(0x80000000u, NULL);
			if (ext >= 0x8000001Du && __get_cpuid(0x80000001u, &eax, &ebx, &ecx, &edx) &&
			    (ecx >> 22 & 1))
				cache_walk(0x8000001Du, &l1, &l2c);
		} else if (max >= 4) {
			cache_walk(4, &l1, &l2c);
		}
		/* the fallbacks are the smallest of the AVX2 generation (32 KiB,
		 * 256 KiB), so a CPU that does not say is never over-blocked; the
		 * bounds reject nonsense from a hypervisor */
		a = l1 >= 16384 && l1 <= (1 << 20) ? l1 : 32768;
		b = l2c >= 131072 && l2c <= (64 << 20) ? l2c : 262144;
		__atomic_store_n(&l1d_bytes, a, __ATOMIC_RELAXED);
		__atomic_store_n(&l2_bytes, b, __ATOMIC_RELAXED);
	}
	*l1d = a;
	*l2 = b;
}

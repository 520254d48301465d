// ann_peer.cc: the peers of bench/ann.c, hnswlib and FAISS's HNSW, driven
// from C++ on the files ann.c wrote, so that only their searches are timed.
//
//   ann_peer --lib hnswlib|faiss --dir DIR --n N --dim D --queries Q
//            --m M --efc EFC --explore E,E,...
//
// Builds the index over DIR/base.f32 (L2, the same M and ef construction,
// one thread), timed; saves it to measure its bytes and loads it back,
// timed; then for each ef = 10 + explore runs every query of
// DIR/query.f32 one at a time (k = 10, one thread), timing the searches
// alone, and only afterwards counts recall@10 against DIR/truth.u32.  It
// prints the lines ann.c reads, named by the library:
//   NAME build S s (cpu S s)  load S s  index M MiB (...)
//   NAME explore E ef F  recall@10 R  qps Q (per cpu s Q)
#include <faiss/IndexHNSW.h>
#include <faiss/index_io.h>
#include <hnswlib/hnswlib.h>
#include <omp.h>
#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

double now(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

template <typename T> std::vector<T> read_all(const std::string &path, size_t n)
{
	std::vector<T> v(n);
	FILE *f = fopen(path.c_str(), "rb");
	if (!f || fread(v.data(), sizeof(T), n, f) != n) {
		fprintf(stderr, "ann_peer: cannot read %zu values from %s\n", n, path.c_str());
		exit(1);
	}
	fclose(f);
	return v;
}

long file_bytes(const std::string &path)
{
	struct stat st;
	return stat(path.c_str(), &st) == 0 ? (long)st.st_size : -1;
}

struct opts {
	std::string lib, dir;
	long n = 0, dim = 0, nq = 0, m = 0, efc = 0;
	std::vector<long> explore;
};

// The peer's index: build, save, load, search one query.
struct peer {
	virtual ~peer() {}
	virtual void build(const float *base) = 0;
	virtual void save(const std::string &path) = 0;
	virtual void load(const std::string &path) = 0;
	virtual void set_ef(long ef) = 0;
	virtual void search(const float *q, long *labels) = 0;
};

struct hnswlib_peer : peer {
	const opts &o;
	hnswlib::L2Space space;
	std::unique_ptr<hnswlib::HierarchicalNSW<float>> idx;
	explicit hnswlib_peer(const opts &op) : o(op), space((size_t)op.dim) {}
	void build(const float *base) override
	{
		idx.reset(new hnswlib::HierarchicalNSW<float>(&space, (size_t)o.n, (size_t)o.m,
		                                              (size_t)o.efc, 100));
		for (long i = 0; i < o.n; i++)
			idx->addPoint(base + (size_t)i * (size_t)o.dim, (hnswlib::labeltype)i);
	}
	void save(const std::string &path) override { idx->saveIndex(path); }
	void load(const std::string &path) override
	{
		idx.reset(new hnswlib::HierarchicalNSW<float>(&space, path, false, (size_t)o.n));
	}
	void set_ef(long ef) override { idx->setEf((size_t)ef); }
	void search(const float *q, long *labels) override
	{
		auto top = idx->searchKnn(q, 10);
		for (int k = 9; k >= 0; k--) { // the farthest comes first
			labels[k] = top.empty() ? -1 : (long)top.top().second;
			if (!top.empty())
				top.pop();
		}
	}
};

struct faiss_peer : peer {
	const opts &o;
	std::unique_ptr<faiss::IndexHNSWFlat> idx;
	explicit faiss_peer(const opts &op) : o(op) {}
	void build(const float *base) override
	{
		idx.reset(new faiss::IndexHNSWFlat((int)o.dim, (int)o.m));
		idx->hnsw.efConstruction = (int)o.efc;
		idx->add(o.n, base);
	}
	void save(const std::string &path) override { faiss::write_index(idx.get(), path.c_str()); }
	void load(const std::string &path) override
	{
		faiss::Index *i = faiss::read_index(path.c_str());
		idx.reset(dynamic_cast<faiss::IndexHNSWFlat *>(i));
		if (!idx) {
			fprintf(stderr, "ann_peer: %s is not an HNSW index\n", path.c_str());
			exit(1);
		}
	}
	void set_ef(long ef) override { idx->hnsw.efSearch = (int)ef; }
	void search(const float *q, long *labels) override
	{
		float d[10];
		faiss::Index::idx_t l[10];
		idx->search(1, q, 10, d, l);
		for (int k = 0; k < 10; k++)
			labels[k] = (long)l[k];
	}
};

int usage()
{
	fprintf(stderr, "usage: ann_peer --lib hnswlib|faiss --dir DIR --n N --dim D --queries Q "
	                "--m M --efc EFC --explore E,E,...\n");
	return 2;
}

} // namespace

int main(int argc, char **argv)
{
	opts o;
	for (int i = 1; i + 1 < argc; i += 2) {
		std::string a = argv[i], v = argv[i + 1];
		if (a == "--lib")
			o.lib = v;
		else if (a == "--dir")
			o.dir = v;
		else if (a == "--n")
			o.n = atol(v.c_str());
		else if (a == "--dim")
			o.dim = atol(v.c_str());
		else if (a == "--queries")
			o.nq = atol(v.c_str());
		else if (a == "--m")
			o.m = atol(v.c_str());
		else if (a == "--efc")
			o.efc = atol(v.c_str());
		else if (a == "--explore")
			for (const char *p = v.c_str(); *p;) {
				char *end;
				o.explore.push_back(strtol(p, &end, 10));
				if (end == p)
					return usage();
				p = *end == ',' ? end + 1 : end;
			}
		else
			return usage();
	}
	if ((o.lib != "hnswlib" && o.lib != "faiss") || o.dir.empty() || o.n <= 0 || o.dim <= 0 ||
	    o.nq <= 0 || o.m <= 0 || o.efc <= 0 || o.explore.empty())
		return usage();
	omp_set_num_threads(1); // FAISS: one thread, as the others
	std::vector<float> base = read_all<float>(o.dir + "/base.f32", (size_t)(o.n * o.dim));
	std::vector<float> q = read_all<float>(o.dir + "/query.f32", (size_t)(o.nq * o.dim));
	std::vector<uint32_t> truth = read_all<uint32_t>(o.dir + "/truth.u32", (size_t)o.nq * 10);
	std::unique_ptr<peer> p;
	if (o.lib == "hnswlib")
		p.reset(new hnswlib_peer(o));
	else
		p.reset(new faiss_peer(o));
	const char *name = o.lib.c_str();
	double t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
	p->build(base.data());
	double build = now(CLOCK_MONOTONIC) - t0, build_cpu = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
	std::string path = o.dir + "/" + o.lib + ".index";
	p->save(path);
	long bytes = file_bytes(path);
	t0 = now(CLOCK_MONOTONIC);
	p->load(path);
	double load = now(CLOCK_MONOTONIC) - t0;
	printf("%s build %.2f s (cpu %.2f s)  load %.4f s  index %.1f MiB (with the vectors)\n", name,
	       build, build_cpu, load, bytes / 1048576.0);
	std::vector<long> labels((size_t)o.nq * 10);
	for (long e : o.explore) {
		p->set_ef(10 + e);
		t0 = now(CLOCK_MONOTONIC);
		c0 = now(CLOCK_PROCESS_CPUTIME_ID);
		for (long j = 0; j < o.nq; j++)
			p->search(q.data() + (size_t)j * (size_t)o.dim, labels.data() + (size_t)j * 10);
		double secs = now(CLOCK_MONOTONIC) - t0, csecs = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
		long hits = 0; // counted after the timed loop
		for (long j = 0; j < o.nq; j++)
			for (int a = 0; a < 10; a++)
				for (int b = 0; b < 10; b++)
					hits += labels[(size_t)j * 10 + (size_t)a] == (long)truth[(size_t)j * 10 + (size_t)b];
		printf("%s explore %4ld ef %4ld  recall@10 %.4f  qps %8.0f (per cpu s %8.0f)\n", name, e,
		       10 + e, hits / (o.nq * 10.0), o.nq / secs, o.nq / csecs);
		fflush(stdout);
	}
	return 0;
}

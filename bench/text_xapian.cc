// text_xapian.cc: the Xapian side of the text benchmark (textbench.c runs
// it; not for use by hand).
//
//     text_xapian DBDIR DOCS.txt
//
// Indexes DOCS.txt, one document per line, into a new database at DBDIR
// (document i + 1 is line i): each line through a TermGenerator with no
// stemmer, so the terms are the words as they are, with their positions;
// one commit at the end.  It prints "indexed N SECONDS", then answers
// queries read from standard input, one a line:
//
//     q WORD...      the top 10 of the OR of the words by BM25
//     quit
//
// with one line each: the microseconds the query took (building the query,
// get_mset(0, 10) and reading the ten document ids), then the ids.  BM25
// has the parameters of Strata's bm25 (k1 1.2, b 0.75; k2 0, k3 1 and the
// minimum normalized length 0.5 as Xapian's defaults).
#include <xapian.h>

#include <chrono>
#include <ctime>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

static double seconds_since(std::chrono::steady_clock::time_point t0)
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		std::cerr << "usage: text_xapian DBDIR DOCS.txt\n";
		return 2;
	}
	try {
		std::ifstream in(argv[2]);
		if (!in) {
			std::cerr << "text_xapian: cannot read " << argv[2] << "\n";
			return 1;
		}
		auto t0 = std::chrono::steady_clock::now();
		std::clock_t c0 = std::clock();
		long n = 0;
		{
			Xapian::WritableDatabase w(argv[1], Xapian::DB_CREATE_OR_OVERWRITE);
			Xapian::TermGenerator tg;
			std::string line;
			while (std::getline(in, line)) {
				Xapian::Document doc;
				tg.set_document(doc);
				tg.index_text(line);
				w.add_document(doc);
				n++;
			}
			w.commit();
		}
		std::printf("indexed %ld %.6f %.6f\n", n, seconds_since(t0),
		            (double)(std::clock() - c0) / CLOCKS_PER_SEC);
		std::fflush(stdout);

		Xapian::Database db(argv[1]);
		Xapian::Enquire enq(db);
		enq.set_weighting_scheme(Xapian::BM25Weight(1.2, 0, 1, 0.75, 0.5));
		std::string line;
		while (std::getline(std::cin, line)) {
			std::istringstream ws(line);
			std::string cmd, w;
			ws >> cmd;
			if (cmd == "quit")
				break;
			std::vector<std::string> terms;
			while (ws >> w)
				terms.push_back(w);
			auto t = std::chrono::steady_clock::now();
			enq.set_query(Xapian::Query(Xapian::Query::OP_OR, terms.begin(), terms.end()));
			Xapian::MSet m = enq.get_mset(0, 10);
			unsigned ids[10];
			int k = 0;
			for (Xapian::MSetIterator it = m.begin(); it != m.end() && k < 10; ++it)
				ids[k++] = *it;
			double us = seconds_since(t) * 1e6;
			std::printf("%.3f", us);
			for (int i = 0; i < k; i++)
				std::printf(" %u", ids[i] - 1);
			std::printf("\n");
			std::fflush(stdout);
		}
	} catch (const Xapian::Error &e) {
		std::cerr << "text_xapian: " << e.get_description() << "\n";
		return 1;
	}
	return 0;
}

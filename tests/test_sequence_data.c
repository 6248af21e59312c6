/* Sequence data: CSV rows grouped by a sequence-id column, the errors (missing column, an id
 * coming back, NaN, empty id, zero-length sequences), splits, and the bucketed loader (equal
 * lengths per batch, every sequence once per epoch, drop_last, seeded order). */
#include "harness.h"

#include "otc/data.h"

static otc_status parse(const char *text, const otc_csv_options *o, otc_seq_dataset **s) {
    return otc_seq_csv_parse(text, strlen(text), "seq.csv", o, s);
}

TEST(seq_csv_groups_rows) {
    const char *csv = "id,x,label\n"
                      "a,1,0\n"
                      "a,2,1\n"
                      "\n"
                      "a,3,1\n"
                      "b,4,0\n"
                      "b,5,0\n"
                      "7,6,1\n";
    otc_csv_options o = {.header = true, .targets = "label", .sequence = "id"};
    otc_seq_dataset *s = NULL;
    REQUIRE(parse(csv, &o, &s) == OTC_OK);
    REQUIRE(s->n == 3);
    CHECK(s->data->n_features == 1 && s->data->n_targets == 1);
    CHECK(!strcmp(s->data->feature_names[0], "x"));
    int want_len[3] = {3, 2, 1}, want_start[3] = {0, 3, 5};
    const char *ids[3] = {"a", "b", "7"};
    for (int i = 0; i < 3; i++) {
        CHECK(s->len[i] == want_len[i]);
        CHECK(s->start[i] == want_start[i]);
        CHECK(!strcmp(s->ids[i], ids[i]));
    }
    for (int r = 0; r < 6; r++) CHECK(s->data->x[r] == (float)(r + 1));
    CHECK(s->data->y[1] == 1.0f && s->data->y[3] == 0.0f);
    CHECK(s->data->lines[2] == 5); /* the blank line is skipped but counted */
    CHECK(otc_seq_max_len(s) == 3);
    CHECK(otc_seq_dataset_check(s, "seq.csv") == OTC_OK);
    otc_seq_dataset_free(s);
    /* without a sequence column the whole file is one sequence */
    o.sequence = NULL;
    o.features = "x";
    REQUIRE(parse(csv, &o, &s) == OTC_OK);
    CHECK(s->n == 1 && s->len[0] == 6);
    otc_seq_dataset_free(s);
}

TEST(seq_csv_errors) {
    otc_seq_dataset *s = NULL;
    otc_csv_options o = {.header = true, .targets = "label", .sequence = "sid"};
    CHECK(parse("id,x,label\na,1,0\n", &o, &s) == OTC_ERR_ARG);
    CHECK(strstr(otc_last_error(), "seq.csv: no sequence column named \"sid\""));
    o.sequence = "id";
    CHECK(parse("id,x,label\na,1,0\nb,2,0\na,3,1\n", &o, &s) == OTC_ERR_FORMAT);
    CHECK(strstr(otc_last_error(), "seq.csv:4: sequence \"a\" continues after sequence \"b\""));
    CHECK(strstr(otc_last_error(), "line 2"));
    CHECK(parse("id,x,label\na,1,0\na,nan,1\n", &o, &s) == OTC_ERR_FORMAT);
    CHECK(strstr(otc_last_error(), "seq.csv:3: column 2 (x)"));
    CHECK(parse("id,x,label\na,1,0\n,2,1\n", &o, &s) == OTC_ERR_FORMAT);
    CHECK(strstr(otc_last_error(), "seq.csv:3: column 1 (id): empty"));
    o.sequence = "label";
    CHECK(parse("id,x,label\na,1,0\n", &o, &s) == OTC_ERR_ARG);
    CHECK(strstr(otc_last_error(), "both the sequence and a target"));
    o.sequence = "id";
    o.features = "id,x";
    CHECK(parse("id,x,label\na,1,0\n", &o, &s) == OTC_ERR_ARG);
    CHECK(strstr(otc_last_error(), "both the sequence and a feature"));
    CHECK(s == NULL);
    /* a dataset built in a program: lengths of 0 and NaN steps */
    int lens[3] = {2, 0, 1};
    CHECK(otc_seq_dataset_new(3, lens, 1, 1) == NULL);
    CHECK(strstr(otc_last_error(), "sequence 1 has length 0"));
    lens[1] = 3;
    s = otc_seq_dataset_new(3, lens, 1, 1);
    REQUIRE(s);
    s->data->x[3] = NAN; /* sequence 1, step 2 */
    CHECK(otc_seq_dataset_check(s, "gen") == OTC_ERR_FORMAT);
    CHECK(strstr(otc_last_error(), "gen: sequence s1 step 2"));
    otc_seq_dataset_free(s);
}

/* Lengths 5, 7, 10 mixed: x holds (sequence * 100 + step), to check the step-major layout. */
static otc_seq_dataset *mixed(void) {
    int lens[15];
    for (int i = 0; i < 15; i++) lens[i] = i % 3 == 0 ? 5 : i % 3 == 1 ? 7 : 10;
    lens[14] = 5; /* 6 of length 5, 5 of 7, 4 of 10 */
    otc_seq_dataset *s = otc_seq_dataset_new(15, lens, 1, 1);
    for (int i = 0; s && i < 15; i++)
        for (int t = 0; t < lens[i]; t++) {
            s->data->x[s->start[i] + t] = (float)(i * 100 + t);
            s->data->y[s->start[i] + t] = (float)i;
        }
    return s;
}

TEST(seq_loader_buckets) {
    otc_seq_dataset *s = mixed();
    REQUIRE(s);
    for (int drop = 0; drop < 2; drop++) {
        otc_seq_loader *l = otc_seq_loader_new(s, 4, true, drop, 9);
        REQUIRE(l);
        /* 6/4, 5/4, 4/4: drop_last 1+1+1, else 2+2+1 */
        CHECK(otc_seq_loader_batches(l) == (drop ? 3 : 5));
        for (int epoch = 0; epoch < 2; epoch++) {
            int seen[15] = {0}, batches = 0, B, T;
            const float *x, *y;
            const int *seqs;
            while ((B = otc_seq_loader_next(l, &T, &x, &y, &seqs)) > 0) {
                batches++;
                CHECK(!drop || B == 4);
                for (int i = 0; i < B; i++) {
                    int q = seqs[i];
                    seen[q]++;
                    CHECK(s->len[q] == T); /* one length per batch */
                    for (int t = 0; t < T; t++) {
                        CHECK(x[t * B + i] == (float)(q * 100 + t));
                        CHECK(y[t * B + i] == (float)q);
                    }
                }
            }
            CHECK(batches == (drop ? 3 : 5));
            int total = 0;
            for (int q = 0; q < 15; q++) {
                CHECK(seen[q] <= 1);
                total += seen[q];
            }
            CHECK(total == (drop ? 12 : 15));
        }
        otc_seq_loader_free(l);
    }
    otc_seq_dataset_free(s);
}

/* The same seed serves the same batches; the epochs differ; no shuffle keeps the order. */
TEST(seq_loader_seeded) {
    otc_seq_dataset *s = mixed();
    REQUIRE(s);
    int order[3][2][15];
    for (int run = 0; run < 3; run++) {
        otc_seq_loader *l = otc_seq_loader_new(s, 2, true, false, run < 2 ? 5 : 6);
        for (int epoch = 0; epoch < 2; epoch++) {
            int k = 0, B;
            const int *seqs;
            while ((B = otc_seq_loader_next(l, NULL, NULL, NULL, &seqs)) > 0)
                for (int i = 0; i < B; i++) order[run][epoch][k++] = seqs[i];
        }
        otc_seq_loader_free(l);
    }
    CHECK(!memcmp(order[0], order[1], sizeof order[0]));
    CHECK(memcmp(order[0][0], order[0][1], sizeof order[0][0]) != 0);
    CHECK(memcmp(order[0], order[2], sizeof order[0]) != 0);
    otc_seq_loader *l = otc_seq_loader_new(s, 100, false, false, 1);
    const int *seqs;
    int T, B = otc_seq_loader_next(l, &T, NULL, NULL, &seqs);
    CHECK(B == 6 && T == 5 && seqs[0] == 0 && seqs[1] == 3);
    otc_seq_loader_free(l);
    CHECK(otc_seq_loader_new(s, 0, false, false, 1) == NULL);
    otc_seq_dataset_free(s);
}

TEST(seq_split) {
    otc_seq_dataset *s = mixed(), *train = NULL, *test = NULL;
    REQUIRE(s);
    REQUIRE(otc_seq_dataset_split(s, 0.2f, 3, &train, &test) == OTC_OK);
    CHECK(train->n == 12 && test->n == 3);
    /* every sequence lands whole on one side, with its values */
    int seen[15] = {0};
    otc_seq_dataset *parts[2] = {train, test};
    for (int p = 0; p < 2; p++)
        for (int i = 0; i < parts[p]->n; i++) {
            int q = atoi(parts[p]->ids[i] + 1);
            seen[q]++;
            CHECK(parts[p]->len[i] == s->len[q]);
            for (int t = 0; t < parts[p]->len[i]; t++)
                CHECK(parts[p]->data->x[parts[p]->start[i] + t] == (float)(q * 100 + t));
        }
    for (int q = 0; q < 15; q++) CHECK(seen[q] == 1);
    otc_seq_dataset_free(train);
    otc_seq_dataset_free(test);
    CHECK(otc_seq_dataset_split(s, 1.5f, 3, &train, &test) == OTC_ERR_ARG);
    otc_seq_dataset_free(s);
}

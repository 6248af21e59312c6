/* Tests for data loading: CSV parsing and its errors, subsets, seeded splits, the
 * standardiser and the DataLoader. */
#include "harness.h"

#include "otc/data.h"
#include "otc/text.h"

static otc_dataset *parse(const char *text, const otc_csv_options *opt, otc_status *st) {
    otc_dataset *d = NULL;
    *st = otc_csv_parse(text, strlen(text), "t.csv", opt, &d);
    return d;
}

static bool contains(const char *haystack, const char *needle) {
    return strstr(haystack, needle) != NULL;
}

TEST(data_csv_header_names_and_values) {
    otc_csv_options opt = {.header = true, .targets = "y"};
    otc_status st;
    otc_dataset *d = parse("a,y,b\n1,2,3\n-4.5,5e-1,6\n", &opt, &st);
    REQUIRE(st == OTC_OK && d);
    CHECK(d->rows == 2 && d->n_features == 2 && d->n_targets == 1);
    CHECK(strcmp(d->feature_names[0], "a") == 0 && strcmp(d->feature_names[1], "b") == 0);
    CHECK(strcmp(d->target_names[0], "y") == 0);
    const float x[] = {1, 3, -4.5f, 6}, y[] = {2, 0.5f};
    for (int i = 0; i < 4; i++) CHECK(d->x[i] == x[i]);
    for (int i = 0; i < 2; i++) CHECK(d->y[i] == y[i]);
    otc_dataset_free(d);
}

TEST(data_csv_no_header_indices_and_order) {
    /* Features are taken in the order listed, not file order. */
    otc_csv_options opt = {.targets = "3", .features = "2, 0"};
    otc_status st;
    otc_dataset *d = parse("1,2,3,4\n5,6,7,8\n", &opt, &st);
    REQUIRE(st == OTC_OK && d);
    CHECK(d->rows == 2 && d->n_features == 2 && d->n_targets == 1);
    CHECK(strcmp(d->feature_names[0], "c2") == 0 && strcmp(d->feature_names[1], "c0") == 0);
    CHECK(strcmp(d->target_names[0], "c3") == 0);
    CHECK(d->x[0] == 3 && d->x[1] == 1 && d->x[2] == 7 && d->x[3] == 5);
    CHECK(d->y[0] == 4 && d->y[1] == 8);
    otc_dataset_free(d);

    /* No targets: every column is a feature. Several targets by name and index mixed. */
    d = parse("1,2,3\n", &(otc_csv_options){0}, &st);
    REQUIRE(st == OTC_OK && d);
    CHECK(d->n_features == 3 && d->n_targets == 0 && d->x[2] == 3);
    otc_dataset_free(d);
    d = parse("p,q,r\n1,2,3\n", &(otc_csv_options){.header = true, .targets = "r,0"}, &st);
    REQUIRE(st == OTC_OK && d);
    CHECK(d->n_features == 1 && d->n_targets == 2);
    CHECK(d->y[0] == 3 && d->y[1] == 1 && d->x[0] == 2);
    CHECK(strcmp(d->target_names[1], "p") == 0);
    otc_dataset_free(d);
}

TEST(data_csv_crlf_blank_lines_bom_and_spaces) {
    otc_csv_options opt = {.header = true, .targets = "t"};
    otc_status st;
    otc_dataset *d = parse("\xEF\xBB\xBF\"x\", t\r\n 1 , 2\r\n\r\n3,\t4\r\n\r\n\n", &opt, &st);
    REQUIRE(st == OTC_OK && d);
    CHECK(d->rows == 2);
    CHECK(strcmp(d->feature_names[0], "x") == 0);
    CHECK(d->x[0] == 1 && d->y[0] == 2 && d->x[1] == 3 && d->y[1] == 4);
    otc_dataset_free(d);
    /* No trailing newline at all. */
    d = parse("1,2\n3,4", &(otc_csv_options){0}, &st);
    REQUIRE(st == OTC_OK && d);
    CHECK(d->rows == 2 && d->x[3] == 4);
    otc_dataset_free(d);
}

TEST(data_csv_other_delimiters) {
    otc_status st;
    otc_dataset *d =
        parse("a;b\n1,5;2\n", &(otc_csv_options){.header = true, .delimiter = ';'}, &st);
    /* "1,5" is not a number with ';' as delimiter (no decimal commas). */
    CHECK(st == OTC_ERR_FORMAT && !d);
    d = parse("a;b\n1.5;2\n", &(otc_csv_options){.header = true, .delimiter = ';', .targets = "b"},
              &st);
    REQUIRE(st == OTC_OK && d);
    CHECK(d->x[0] == 1.5f && d->y[0] == 2);
    otc_dataset_free(d);
    d = parse("1\t2\t3\n", &(otc_csv_options){.delimiter = '\t', .targets = "1"}, &st);
    REQUIRE(st == OTC_OK && d);
    CHECK(d->n_features == 2 && d->x[1] == 3 && d->y[0] == 2);
    otc_dataset_free(d);
}

TEST(data_csv_class_labels_map_in_order_of_appearance) {
    otc_csv_options opt = {.header = true, .targets = "species"};
    otc_status st;
    otc_dataset *d = parse("f,species\n1,versicolor\n2,setosa\n3,versicolor\n4,\"virginica\"\n"
                           "5,setosa\n",
                           &opt, &st);
    REQUIRE(st == OTC_OK && d);
    const float want[] = {0, 1, 0, 2, 1};
    for (int i = 0; i < 5; i++) CHECK(d->y[i] == want[i]);
    otc_dataset_free(d);
    /* Features must be numeric even so. */
    d = parse("f,species\nsmall,setosa\n", &opt, &st);
    CHECK(st == OTC_ERR_FORMAT && !d);
    CHECK(contains(otc_last_error(), "t.csv:2: column 1 (f)"));
}

TEST(data_csv_bad_cell_names_file_line_column) {
    otc_csv_options opt = {.header = true, .targets = "y"};
    otc_status st;
    otc_dataset *d = parse("a,b,y\n1,2,3\n4,x5,6\n", &opt, &st);
    CHECK(st == OTC_ERR_FORMAT && !d);
    const char *msg = otc_last_error();
    CHECK_MSG(contains(msg, "t.csv:3: column 2 (b)") && contains(msg, "\"x5\""), "%s", msg);
    /* Numeric target column: a later word is an error, not a new class. */
    d = parse("a,y\n1,2\n3,oops\n", &opt, &st);
    CHECK(st == OTC_ERR_FORMAT && !d);
    CHECK_MSG(contains(otc_last_error(), "t.csv:3: column 2 (y)"), "%s", otc_last_error());
    /* Empty cells, non-finite values and numbers beyond float range. */
    const char *bad[] = {"a,y\n1,2\n,3\n",     "a,y\n1,2\nnan,3\n",   "a,y\n1,2\ninf,3\n",
                         "a,y\n1,2\n1e39,3\n", "a,y\n1,2\n1.5.2,3\n", "a,y\n1,2\n0x,3\n"};
    for (int i = 0; i < 6; i++) {
        d = parse(bad[i], &opt, &st);
        CHECK_MSG(st == OTC_ERR_FORMAT && !d, "case %d", i);
        CHECK_MSG(contains(otc_last_error(), "t.csv:3: column 1 (a)"), "case %d: %s", i,
                  otc_last_error());
    }
    /* The line number counts blank lines too (editors do). */
    d = parse("a,y\n\n1,2\n\n\nz,3\n", &opt, &st);
    CHECK(st == OTC_ERR_FORMAT);
    CHECK_MSG(contains(otc_last_error(), "t.csv:6:"), "%s", otc_last_error());
}

/* One rule for a whole target column, wherever the odd cell is: nan, inf or an overflowing
 * number is an error at its line and column, first row or not. */
TEST(data_csv_target_nonfinite_is_an_error_on_any_row) {
    otc_csv_options opt = {.header = true, .targets = "y"};
    otc_status st;
    const char *bad[] = {"a,y\n1,nan\n2,0\n3,1\n", "a,y\n1,0\n2,1\n3,nan\n", "a,y\n1,inf\n2,0\n",
                         "a,y\n1,1e39\n2,0\n", "a,y\n1,-inf\n2,cat\n"};
    const char *where[] = {"t.csv:2: column 2 (y)", "t.csv:4: column 2 (y)",
                           "t.csv:2: column 2 (y)", "t.csv:2: column 2 (y)",
                           "t.csv:2: column 2 (y)"};
    for (int i = 0; i < 5; i++) {
        otc_dataset *d = parse(bad[i], &opt, &st);
        CHECK_MSG(st == OTC_ERR_FORMAT && !d, "case %d", i);
        CHECK_MSG(contains(otc_last_error(), where[i]) && contains(otc_last_error(), "finite"),
                  "case %d: %s", i, otc_last_error());
    }
}

/* Words and numbers in one target column: an error at the first word, whichever comes first,
 * naming a line that holds a number. */
TEST(data_csv_target_mixing_words_and_numbers_is_an_error) {
    otc_csv_options opt = {.header = true, .targets = "y"};
    otc_status st;
    otc_dataset *d = parse("a,y\n1,cat\n2,dog\n3,7\n", &opt, &st);
    CHECK(st == OTC_ERR_FORMAT && !d);
    CHECK_MSG(contains(otc_last_error(), "t.csv:2: column 2 (y)") &&
                  contains(otc_last_error(), "\"cat\"") && contains(otc_last_error(), "line 4"),
              "%s", otc_last_error());
    d = parse("a,y\n1,0\n2,1\n\n3,dog\n", &opt, &st);
    CHECK(st == OTC_ERR_FORMAT && !d);
    CHECK_MSG(contains(otc_last_error(), "t.csv:5: column 2 (y)") &&
                  contains(otc_last_error(), "\"dog\"") && contains(otc_last_error(), "line 2"),
              "%s", otc_last_error());
}

/* last_target: the last column is the target, words or numbers; the rest are features. */
TEST(data_csv_last_column_as_target) {
    otc_csv_options opt = {.header = true, .last_target = true};
    otc_status st;
    otc_dataset *d = parse("a,b,kind\n1,2,in\n3,4,out\n5,6,in\n", &opt, &st);
    REQUIRE(st == OTC_OK && d);
    CHECK(d->n_features == 2 && d->n_targets == 1 && d->rows == 3);
    CHECK(d->y[0] == 0 && d->y[1] == 1 && d->y[2] == 0);
    CHECK(d->x[4] == 5 && d->x[5] == 6);
    CHECK(!strcmp(d->target_names[0], "kind"));
    otc_dataset_free(d);
}

TEST(data_csv_wrong_cell_count) {
    otc_status st;
    otc_dataset *d = parse("a,b,c\n1,2,3\n4,5\n", &(otc_csv_options){.header = true}, &st);
    CHECK(st == OTC_ERR_FORMAT && !d);
    CHECK_MSG(contains(otc_last_error(), "t.csv:3: expected 3 cells, found 2"), "%s",
              otc_last_error());
    d = parse("1,2\n3,4,5\n", &(otc_csv_options){0}, &st);
    CHECK(st == OTC_ERR_FORMAT && !d);
    CHECK(contains(otc_last_error(), "t.csv:2: expected 2 cells, found 3"));
}

TEST(data_csv_empty_and_header_only) {
    otc_status st;
    const char *empties[] = {"", "\n", "\r\n\n  \n"};
    for (int i = 0; i < 3; i++) {
        otc_dataset *d = parse(empties[i], &(otc_csv_options){.header = true}, &st);
        CHECK_MSG(st == OTC_ERR_FORMAT && !d, "case %d", i);
        CHECK(contains(otc_last_error(), "t.csv") && contains(otc_last_error(), "empty"));
    }
    otc_dataset *d = parse("a,b\n", &(otc_csv_options){.header = true}, &st);
    CHECK(st == OTC_ERR_FORMAT && !d);
    CHECK(contains(otc_last_error(), "t.csv") && contains(otc_last_error(), "no data rows"));
    /* Binary junk is refused, not read as a short cell. */
    static const char nul[] = "1,2\n3\0,4\n";
    d = NULL;
    st = otc_csv_parse(nul, sizeof nul - 1, "t.csv", NULL, &d);
    CHECK(st == OTC_ERR_FORMAT && !d && contains(otc_last_error(), "t.csv:2"));
}

TEST(data_csv_bad_column_lists) {
    otc_status st;
    otc_csv_options opt = {.header = true, .targets = "nope"};
    otc_dataset *d = parse("a,b\n1,2\n", &opt, &st);
    CHECK(st == OTC_ERR_ARG && !d);
    CHECK_MSG(contains(otc_last_error(), "t.csv") && contains(otc_last_error(), "\"nope\""), "%s",
              otc_last_error());
    opt.targets = "2";
    d = parse("a,b\n1,2\n", &opt, &st);
    CHECK(st == OTC_ERR_ARG && !d && contains(otc_last_error(), "out of range"));
    opt = (otc_csv_options){.header = true, .targets = "b", .features = "a,b"};
    d = parse("a,b\n1,2\n", &opt, &st);
    CHECK(st == OTC_ERR_ARG && !d && contains(otc_last_error(), "both a target and a feature"));
    opt = (otc_csv_options){.header = true, .features = "a,a"};
    d = parse("a,b\n1,2\n", &opt, &st);
    CHECK(st == OTC_ERR_ARG && !d && contains(otc_last_error(), "twice"));
    opt = (otc_csv_options){.header = true, .targets = "-1"};
    d = parse("a,b\n1,2\n", &opt, &st);
    CHECK(st == OTC_ERR_ARG && !d);
}

/* otc_list_split: items by commas (and blanks when asked), blanks around each trimmed; an
 * empty item is an error naming its position, never skipped. */
static void expect_items(const char *text, bool blanks, int want_n, const char *const *want) {
    char buf[64], *items[8];
    int n = -1;
    snprintf(buf, sizeof buf, "%s", text);
    otc_status st = otc_list_split(buf, blanks, items, 8, &n);
    CHECK_MSG(st == OTC_OK && n == want_n, "'%s': status %d, %d items", text, st, n);
    for (int i = 0; i < want_n && i < n; i++)
        CHECK_MSG(!strcmp(items[i], want[i]), "'%s' item %d: '%s'", text, i + 1, items[i]);
}

static void expect_empty_item(const char *text, bool blanks, const char *message) {
    char buf[64], *items[8];
    int n = 0;
    snprintf(buf, sizeof buf, "%s", text);
    CHECK_MSG(otc_list_split(buf, blanks, items, 8, &n) == OTC_ERR_ARG &&
                  !strcmp(otc_last_error(), message),
              "'%s': %s", text, otc_last_error());
}

TEST(list_split_items_and_empty_items) {
    expect_items("a,b", false, 2, (const char *[]){"a", "b"});
    expect_items("  sepal length , y ", false, 2, (const char *[]){"sepal length", "y"});
    expect_items("relu  tanh,sigmoid , gauss", true, 4,
                 (const char *[]){"relu", "tanh", "sigmoid", "gauss"});
    expect_items("", true, 0, NULL);
    expect_items(" \t ", false, 0, NULL);
    expect_empty_item("5x5, ,", true, "item 2 is empty");
    expect_empty_item("fitness,,connections", true, "item 2 is empty");
    expect_empty_item(",a", false, "item 1 is empty");
    expect_empty_item("a b ,", true, "item 3 is empty");
    expect_empty_item("a,b,", false, "item 3 is empty");
    expect_empty_item(",", false, "item 1 is empty");
    expect_empty_item("a,b,c,d,e,f,g,h,i", false, "more than 8 items");
}

/* Column lists (targets, features, sequence; the CLI's --target, --features, --drop): an empty
 * item is an error naming the file, the list and the item, not a column quietly left out. */
TEST(data_csv_column_list_empty_item) {
    otc_status st;
    otc_csv_options opt = {.header = true, .targets = "y,", .features = "a"};
    otc_dataset *d = parse("a,b,y\n1,2,3\n", &opt, &st);
    CHECK(st == OTC_ERR_ARG && !d);
    CHECK_MSG(!strcmp(otc_last_error(), "t.csv: target column list \"y,\": item 2 is empty"), "%s",
              otc_last_error());
    opt = (otc_csv_options){.header = true, .targets = "y", .features = "a,,b"};
    d = parse("a,b,y\n1,2,3\n", &opt, &st);
    CHECK_MSG(st == OTC_ERR_ARG && !d &&
                  !strcmp(otc_last_error(), "t.csv: feature column list \"a,,b\": item 2 is empty"),
              "%s", otc_last_error());
    opt = (otc_csv_options){.header = true, .targets = "y", .features = "a, \"\""};
    d = parse("a,b,y\n1,2,3\n", &opt, &st);
    CHECK_MSG(st == OTC_ERR_ARG && !d && contains(otc_last_error(), "item 2 is empty"), "%s",
              otc_last_error());
}

TEST(data_csv_missing_file) {
    otc_dataset *d = (otc_dataset *)1;
    otc_status st = otc_csv_load("/nonexistent/dir/missing.csv", NULL, &d);
    CHECK(st == OTC_ERR_IO && d == NULL);
    CHECK(contains(otc_last_error(), "/nonexistent/dir/missing.csv"));
}

TEST(data_csv_load_iris) {
    otc_dataset *d = NULL;
    otc_csv_options opt = {.header = true, .targets = "species"};
    otc_status st = otc_csv_load(OTC_SOURCE_DIR "/examples/data/iris.csv", &opt, &d);
    REQUIRE(st == OTC_OK && d);
    CHECK(d->rows == 150 && d->n_features == 4 && d->n_targets == 1);
    CHECK(strcmp(d->feature_names[2], "petal_length") == 0);
    /* Per-class counts and the well-known per-class means of Fisher's data. */
    const double want[3][4] = {
        {5.006, 3.428, 1.462, 0.246}, {5.936, 2.770, 4.260, 1.326}, {6.588, 2.974, 5.552, 2.026}};
    double sum[3][4] = {{0}};
    int count[3] = {0};
    for (int r = 0; r < d->rows; r++) {
        int c = (int)d->y[r];
        REQUIRE(c >= 0 && c < 3 && d->y[r] == (float)c);
        count[c]++;
        for (int j = 0; j < 4; j++) sum[c][j] += d->x[r * 4 + j];
    }
    for (int c = 0; c < 3; c++) {
        CHECK(count[c] == 50);
        for (int j = 0; j < 4; j++) CHECK_NEAR(sum[c][j] / 50.0, want[c][j], 1e-4);
    }
    otc_dataset_free(d);
}

/* rows x [i, 10i], y [i + 0.5] so any row can be traced back to its index. */
static otc_dataset *indexed(int rows) {
    otc_dataset *d = otc_dataset_new(rows, 2, 1);
    for (int i = 0; d && i < rows; i++) {
        d->x[2 * i] = (float)i;
        d->x[2 * i + 1] = 10.0f * (float)i;
        d->y[i] = (float)i + 0.5f;
    }
    return d;
}

TEST(data_subset_copies_rows_and_names) {
    otc_dataset *d = indexed(5);
    REQUIRE(d);
    CHECK(strcmp(d->feature_names[1], "x1") == 0 && strcmp(d->target_names[0], "y0") == 0);
    int rows[] = {4, 0, 4};
    otc_dataset *s = otc_dataset_subset(d, rows, 3);
    REQUIRE(s);
    CHECK(s->rows == 3 && s->n_features == 2 && s->n_targets == 1);
    CHECK(s->x[0] == 4 && s->x[1] == 40 && s->y[0] == 4.5f);
    CHECK(s->x[2] == 0 && s->y[1] == 0.5f && s->x[4] == 4);
    s->x[0] = -1; /* a copy, not a view */
    CHECK(d->x[8] == 4);
    otc_dataset_free(s);
    int bad[] = {5};
    CHECK(otc_dataset_subset(d, bad, 1) == NULL);
    CHECK(contains(otc_last_error(), "out of range"));
    s = otc_dataset_subset(d, NULL, 0);
    REQUIRE(s);
    CHECK(s->rows == 0);
    otc_dataset_free(s);
    otc_dataset_free(d);
}

TEST(data_split_is_a_seeded_partition) {
    otc_dataset *d = indexed(101);
    REQUIRE(d);
    otc_dataset *train, *test;
    REQUIRE(otc_dataset_split(d, 0.2f, 7, &train, &test) == OTC_OK);
    CHECK(test->rows == 20 && train->rows == 81); /* round(101 * 0.2) = 20 */
    int seen[101] = {0};
    bool in_order = true;
    for (int r = 0; r < train->rows; r++) {
        int i = (int)train->x[2 * r];
        CHECK(train->x[2 * r + 1] == 10.0f * (float)i && train->y[r] == (float)i + 0.5f);
        seen[i]++;
        if (r > 0 && train->x[2 * r] < train->x[2 * r - 2]) in_order = false;
    }
    for (int r = 0; r < test->rows; r++) seen[(int)test->x[2 * r]]++;
    for (int i = 0; i < 101; i++) CHECK(seen[i] == 1);
    CHECK(!in_order); /* shuffled */

    /* Same seed, same split; another seed, another split. */
    otc_dataset *train2, *test2;
    REQUIRE(otc_dataset_split(d, 0.2f, 7, &train2, &test2) == OTC_OK);
    CHECK(memcmp(test->x, test2->x, 40 * sizeof(float)) == 0);
    otc_dataset_free(train2);
    otc_dataset_free(test2);
    REQUIRE(otc_dataset_split(d, 0.2f, 8, &train2, &test2) == OTC_OK);
    CHECK(memcmp(test->x, test2->x, 40 * sizeof(float)) != 0);
    otc_dataset_free(train2);
    otc_dataset_free(test2);
    otc_dataset_free(train);
    otc_dataset_free(test);

    REQUIRE(otc_dataset_split(d, 0.0f, 1, &train, &test) == OTC_OK);
    CHECK(train->rows == 101 && test->rows == 0);
    otc_dataset_free(train);
    otc_dataset_free(test);
    CHECK(otc_dataset_split(d, 1.5f, 1, &train, &test) == OTC_ERR_ARG);
    CHECK(train == NULL && test == NULL);
    CHECK(otc_dataset_split(d, NAN, 1, &train, &test) == OTC_ERR_ARG);
    otc_dataset_free(d);
}

TEST(data_standardizer_fits_on_train_only) {
    /* Feature 0: 1,2,3,6 -> mean 3, population variance (4+1+0+9)/4 = 3.5.
     * Feature 1 is constant: its std is reported as 1 and it maps to 0. */
    otc_dataset *train = otc_dataset_new(4, 2, 0);
    REQUIRE(train);
    const float v[] = {1, 0.1f, 2, 0.1f, 3, 0.1f, 6, 0.1f};
    memcpy(train->x, v, sizeof v);
    otc_standardizer s = {0};
    REQUIRE(otc_standardizer_fit(train, &s) == OTC_OK);
    CHECK(s.n == 2);
    CHECK_NEAR(s.mean[0], 3.0, 1e-6);
    CHECK_NEAR(s.std[0], sqrt(3.5), 1e-6);
    CHECK_NEAR(s.mean[1], 0.1, 1e-7);
    CHECK(s.std[1] == 1.0f);

    otc_dataset *test = otc_dataset_new(1, 2, 0);
    REQUIRE(test);
    test->x[0] = 10;
    test->x[1] = 0.1f;
    REQUIRE(otc_standardizer_apply(&s, test) == OTC_OK);
    CHECK_NEAR(test->x[0], (10.0 - 3.0) / sqrt(3.5), 1e-5);
    CHECK_NEAR(test->x[1], 0.0, 1e-7);
    REQUIRE(otc_standardizer_apply(&s, train) == OTC_OK);
    double mean = 0, sq = 0;
    for (int r = 0; r < 4; r++) mean += train->x[2 * r] / 4.0;
    for (int r = 0; r < 4; r++) sq += (train->x[2 * r] - mean) * (train->x[2 * r] - mean) / 4.0;
    CHECK_NEAR(mean, 0.0, 1e-6);
    CHECK_NEAR(sq, 1.0, 1e-5);

    otc_dataset *wrong = otc_dataset_new(1, 3, 0);
    REQUIRE(wrong);
    CHECK(otc_standardizer_apply(&s, wrong) == OTC_ERR_SHAPE);
    otc_dataset *none = otc_dataset_new(0, 2, 0);
    otc_standardizer s2 = {0};
    CHECK(otc_standardizer_fit(none, &s2) == OTC_ERR_ARG);
    otc_standardizer_free(&s);
    otc_standardizer_free(&s2);
    otc_dataset_free(none);
    otc_dataset_free(wrong);
    otc_dataset_free(test);
    otc_dataset_free(train);
}

/* One epoch: batch sizes into sizes[], each row index's count into seen[]. */
static int run_epoch(otc_dataloader *dl, int *sizes, int *seen, int *order) {
    const float *x, *y;
    int n, batches = 0, k = 0;
    while ((n = otc_dataloader_next(dl, &x, &y)) > 0) {
        sizes[batches++] = n;
        for (int i = 0; i < n; i++) {
            int row = (int)x[2 * i];
            CHECK(x[2 * i + 1] == 10.0f * (float)row && y[i] == (float)row + 0.5f);
            seen[row]++;
            order[k++] = row;
        }
    }
    return batches;
}

TEST(data_loader_batches_and_drop_last) {
    otc_dataset *d = indexed(10);
    REQUIRE(d);
    otc_dataloader *dl = otc_dataloader_new(d, 3, true, false, 1);
    REQUIRE(dl);
    CHECK(otc_dataloader_batches(dl) == 4);
    int sizes[8], seen[10] = {0}, order[10];
    CHECK(run_epoch(dl, sizes, seen, order) == 4);
    CHECK(sizes[0] == 3 && sizes[1] == 3 && sizes[2] == 3 && sizes[3] == 1);
    for (int i = 0; i < 10; i++) CHECK(seen[i] == 1);
    otc_dataloader_free(dl);

    dl = otc_dataloader_new(d, 3, true, true, 1);
    REQUIRE(dl);
    CHECK(otc_dataloader_batches(dl) == 3);
    memset(seen, 0, sizeof seen);
    CHECK(run_epoch(dl, sizes, seen, order) == 3);
    int total = 0;
    for (int i = 0; i < 10; i++) total += seen[i];
    CHECK(total == 9);
    otc_dataloader_free(dl);

    /* A batch larger than the data: one short batch, or none with drop_last. */
    dl = otc_dataloader_new(d, 64, false, false, 1);
    REQUIRE(dl);
    CHECK(otc_dataloader_batches(dl) == 1 && run_epoch(dl, sizes, seen, order) == 1);
    CHECK(sizes[0] == 10);
    otc_dataloader_free(dl);
    dl = otc_dataloader_new(d, 64, false, true, 1);
    REQUIRE(dl);
    CHECK(otc_dataloader_batches(dl) == 0 && run_epoch(dl, sizes, seen, order) == 0);
    otc_dataloader_free(dl);

    CHECK(otc_dataloader_new(d, 0, true, false, 1) == NULL);
    CHECK(otc_dataloader_new(NULL, 4, true, false, 1) == NULL);
    otc_dataset_free(d);
}

TEST(data_loader_reshuffles_each_epoch_reproducibly) {
    otc_dataset *d = indexed(20);
    REQUIRE(d);
    otc_dataloader *a = otc_dataloader_new(d, 6, true, false, 42);
    otc_dataloader *b = otc_dataloader_new(d, 6, true, false, 42);
    REQUIRE(a && b);
    int sizes[8], seen[20] = {0}, e1[20], e2[20], b1[20], b2[20];
    run_epoch(a, sizes, seen, e1);
    run_epoch(a, sizes, seen, e2);
    run_epoch(b, sizes, seen, b1);
    run_epoch(b, sizes, seen, b2);
    for (int i = 0; i < 20; i++) CHECK(seen[i] == 4);
    CHECK(memcmp(e1, e2, sizeof e1) != 0); /* a new order each epoch */
    CHECK(memcmp(e1, b1, sizeof e1) == 0 && memcmp(e2, b2, sizeof e2) == 0); /* seeded */
    bool identity = true;
    for (int i = 0; i < 20; i++) identity &= e1[i] == i;
    CHECK(!identity);
    otc_dataloader_free(a);
    otc_dataloader_free(b);

    /* Without shuffling, rows come in order every epoch. */
    otc_dataloader *c = otc_dataloader_new(d, 7, false, false, 42);
    REQUIRE(c);
    for (int epoch = 0; epoch < 2; epoch++) {
        run_epoch(c, sizes, seen, e1);
        for (int i = 0; i < 20; i++) CHECK(e1[i] == i);
    }
    otc_dataloader_free(c);
    otc_dataset_free(d);
}

// Unit checks for sim/diag (JSON pointer escaping, the one-line-per-problem format) and sim/log
// (off and free by default; unit prefixes, bare unit names and topic flags select what logs).
#include <gtest/gtest.h>

#include "sim/diag.h"
#include "sim/log.h"

using namespace hcasim;

TEST(diag, pointer_tokens_are_escaped_as_rfc6901_asks) {
    EXPECT_EQ(pointer_join("", "a"), "/a");
    EXPECT_EQ(pointer_join("/x", "a/b"), "/x/a~1b") << "'/' becomes ~1";
    EXPECT_EQ(pointer_join("/x", "a~b"), "/x/a~0b") << "'~' becomes ~0";
    EXPECT_EQ(pointer_join("/x", "~/"), "/x/~0~1") << "'~' is escaped before it can pair with '/'";
    EXPECT_EQ(pointer_join("/program", size_t{3}), "/program/3") << "array index";
}

TEST(diag, one_line_per_problem_in_the_documented_format) {
    diag d("s.json");
    EXPECT_TRUE(d.ok());
    d.error("/nodes/a/hca/clock", "cannot read \"fast\"", "a frequency such as \"500MHz\"");
    d.error("", "not an object");
    ASSERT_EQ(d.lines().size(), 2u);
    EXPECT_FALSE(d.ok());
    EXPECT_EQ(d.lines()[0],
              "s.json: /nodes/a/hca/clock: cannot read \"fast\" (expected a frequency such as "
              "\"500MHz\")")
        << "FILE: /json/pointer: what is wrong (what was expected)";
    EXPECT_EQ(d.lines()[1], "s.json: /: not an object") << "the root is '/', no empty expectation";
    d.set_file("t.json");
    EXPECT_EQ(d.file(), "t.json");
}

TEST(logger, off_by_default_then_selected_by_unit_and_topic) {
    logger& l = logger::instance();
    int evaluated = 0;
    auto side_effect = [&evaluated] { return ++evaluated; };
    EXPECT_FALSE(l.enabled("a.hca.tpt", log_topic::tpt)) << "nothing logs by default";
    HCASIM_LOG("a.hca.tpt", tpt, "x" << side_effect());
    EXPECT_EQ(evaluated, 0) << "a disabled log line does not evaluate its expression";

    EXPECT_FALSE(l.set_level("tpt=verbose")) << "unknown level refused";
    EXPECT_FALSE(l.set_topics("QP,BOGUS")) << "unknown topic refused";
    EXPECT_FALSE(l.enabled("a.hca.tpt", log_topic::tpt)) << "refused settings enable nothing";

    ASSERT_TRUE(l.set_level("tpt=debug"));
    EXPECT_TRUE(l.enabled("a.hca.tpt", log_topic::tpt)) << "a bare unit name matches on every node";
    EXPECT_TRUE(l.enabled("b.hca.tpt", log_topic::tpt));
    EXPECT_TRUE(l.enabled("tpt", log_topic::qp)) << "all topics when none were chosen";
    EXPECT_FALSE(l.enabled("a.hca.xtpt", log_topic::tpt)) << "a suffix match needs a dot before it";
    EXPECT_FALSE(l.enabled("a.hca.qpc_cache", log_topic::tpt)) << "other units stay quiet";

    ASSERT_TRUE(l.set_topics("DMA,PCIE"));
    EXPECT_FALSE(l.enabled("a.hca.tpt", log_topic::tpt)) << "topic TPT no longer selected";
    EXPECT_TRUE(l.enabled("a.hca.tpt", log_topic::dma));

    ASSERT_TRUE(l.set_level("a.hca=info"));
    EXPECT_TRUE(l.enabled("a.hca.dma", log_topic::dma))
        << "a hierarchical prefix selects its subtree";
    EXPECT_TRUE(l.enabled("a.hca", log_topic::pcie));
    HCASIM_LOG("a.hca.dma", dma, "evaluated " << side_effect());
    EXPECT_EQ(evaluated, 1) << "an enabled log line is built once";
    EXPECT_FALSE(l.enabled("a.hcax.dma", log_topic::dma)) << "a prefix ends at a name boundary";
}

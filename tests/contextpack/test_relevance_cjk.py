# ruff: noqa: RUF001 (Chinese and Japanese text is written with its own punctuation)
"""Chinese and Japanese prompts and entries (real model, real vector index): the English
model's cosine between two such texts says nothing (to it any two look alike), so their
words decide; a lone particle or kana is not a word that decides
(powercontext.search.policy, CJK_STOP_TERMS; relevance.numbers.UNREADABLE_COVERAGE)."""

import pytest

from tests.api_calls import cited, prepare

pytestmark = pytest.mark.django_db(transaction=True)


def test_entries_sharing_a_character_or_two_with_a_chinese_prompt_stay_out(api, remember):
    def entry(text):
        return remember(text, scope_id="cjk1")["entry"]["citation"]["entry_id"]

    refund = entry("退款提交后 T+1 个工作日到账，超过 3 天没到账先查渠道退款单状态。")
    entry("商户账单每天凌晨两点生成，对账文件放在 SFTP 上。")
    entry("支付单超时时间是 30 分钟，超时后自动关闭。")
    entry("渠道回调失败会重试 8 次，间隔逐渐拉长。")
    assert cited(prepare(api, "cjk1", "退款多久能到账？")) == [refund]


def test_a_japanese_prompt_is_not_answered_by_its_particles(api, remember):
    def entry(text):
        return remember(text, scope_id="cjk2")["entry"]["citation"]["entry_id"]

    deploy = entry("本番へのデプロイは金曜日の午後には行わない。")
    entry("テストの実行は make test を使う。")
    entry("ログの保存期間は九十日とする。")
    assert cited(prepare(api, "cjk2", "デプロイはいつ禁止ですか")) == [deploy]
    # Nothing in the scope is about invoices: the particles of the question are no answer.
    assert cited(prepare(api, "cjk2", "請求書のフォーマットをどこで変更するの？")) == []


def test_a_chinese_prompt_naming_an_identifier_finds_its_entry(api, remember):
    def entry(text):
        return remember(text, scope_id="cjk3")["entry"]["citation"]["entry_id"]

    pool = entry("`HikariPool` 的连接池大小在 application.yml 里配置，默认 20。")
    entry("支付单超时时间是 30 分钟，超时后自动关闭。")
    assert cited(prepare(api, "cjk3", "HikariPool 连接池要调大，改哪里？")) == [pool]


def test_an_identifier_written_against_chinese_text_is_an_anchor():
    # Chinese and Japanese write no space between their text and an identifier.
    from powercontext.search import relevance

    assert frozenset({"hikaripool"}) in relevance.anchor_names("调大HikariPool的连接池")
    assert frozenset({"make_release"}) in relevance.anchor_names("用make_releaseでタグを作る")
